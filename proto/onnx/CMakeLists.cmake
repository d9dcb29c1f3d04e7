# Our own minimal copy of the ONNX model format (included from
# proto/CMakeLists.txt). Generated header: "onnx/onnx.pb.h".
gopt_proto_library(NAME gopt_onnx_proto PROTOS onnx/onnx.proto)
