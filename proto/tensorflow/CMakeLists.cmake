# Own minimal copies of TensorFlow's GraphDef messages and of the TF.js
# model.json layout (included from proto/CMakeLists.txt).
gopt_proto_library(NAME gopt_tf_proto
  PROTOS tensorflow/graph.proto tensorflow/tfjs_model.proto)
