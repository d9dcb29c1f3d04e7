# Our minimal copy of XLA's HloModuleProto (same field numbers).
gopt_proto_library(NAME gopt_xla_proto PROTOS xla/hlo.proto)
