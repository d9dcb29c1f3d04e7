# Our minimal copy of the TpuGraphs tuning records (same field numbers).
gopt_proto_library(NAME gopt_tpu_graphs_proto PROTOS tpu_graphs/tuning.proto
                   DEPS gopt_xla_proto)
