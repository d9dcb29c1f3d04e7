#!/usr/bin/env bash
# Writes the hand-made seed inputs (seeds/) into corpus/<format>/ in each
# format's on-disk form: text formats as they are, binary protobufs encoded
# with protoc from our own .proto files, gopt graphs by `gopt convert`.
#
# usage: tests/fuzz/make_seeds.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
seeds="$root/tests/fuzz/seeds"
corpus="$root/tests/fuzz/corpus"
protos="$root/proto"
mkdir -p "$corpus"/{hlo,hlo_proto,onnx,graphdef,tfjs,gopt,tpugraphs}

encode() {  # encode MESSAGE PROTO < text > binary
  protoc --proto_path="$protos" --encode="$1" "$protos/$2"
}

cp "$seeds/small.hlo" "$corpus/hlo/seed_small.hlo"
cp "$seeds/old_syntax.hlo" "$corpus/hlo/seed_old_syntax.hlo"
cp "$seeds/current_xla.hlo" "$corpus/hlo/seed_current_xla.hlo"
cp "$seeds/spmd_sharded.hlo" "$corpus/hlo/seed_spmd_sharded.hlo"
cp "$seeds/spmd_deferred.hlo" "$corpus/hlo/seed_spmd_deferred.hlo"
encode xla.HloModuleProto xla/hlo.proto < "$seeds/hlo_module.txtpb" \
  > "$corpus/hlo_proto/seed_module.pb"
encode tpu_graphs.ModuleTuningData tpu_graphs/tuning.proto \
  < "$seeds/module_tuning.txtpb" > "$corpus/tpugraphs/seed_module_tuning.pb"
encode gopt.onnx.ModelProto onnx/onnx.proto < "$seeds/onnx_model.txtpb" \
  > "$corpus/onnx/seed_model.onnx"
encode gopt.tensorflow.GraphDef tensorflow/graph.proto \
  < "$seeds/graphdef.txtpb" > "$corpus/graphdef/seed_graph.pb"
cp "$seeds/graphdef.txtpb" "$corpus/graphdef/seed_graph.pbtxt"
encode gopt.tensorflow.GraphDef tensorflow/graph.proto \
  < "$seeds/graphdef_training.txtpb" > "$corpus/graphdef/seed_training.pb"
cp "$seeds/graphdef_training.txtpb" "$corpus/graphdef/seed_training.pbtxt"
encode gopt.tensorflow.GraphDef tensorflow/graph.proto \
  < "$seeds/graphdef_functional.txtpb" > "$corpus/graphdef/seed_functional.pb"
cp "$seeds/graphdef_functional.txtpb" "$corpus/graphdef/seed_functional.pbtxt"
encode gopt.onnx.ModelProto onnx/onnx.proto \
  < "$seeds/onnx_runtime_shapes.txtpb" > "$corpus/onnx/seed_runtime_shapes.onnx"
cp "$seeds/tfjs_model.json" "$corpus/tfjs/seed_model.json"
"$build/bin/gopt" convert --out="$corpus/gopt/seed_graph.json" \
  "$seeds/small.hlo" 2>/dev/null
"$build/bin/gopt" convert --out="$corpus/gopt/seed_graph.pb" \
  "$seeds/small.hlo" 2>/dev/null
echo "seeds written to $corpus"
