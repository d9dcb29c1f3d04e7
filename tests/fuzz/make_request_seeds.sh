#!/usr/bin/env bash
# Writes the seed inputs of request_fuzzer.cc into corpus/request/: real
# OptimizeRequest / EvaluateRequest messages over small real graphs from
# ../shared/data (and the hand-made seeds/small.hlo as a gopt.v1.Graph), with
# preset and explicit topologies, budgets, baseline_methods and plans.
#
# A fuzzer input is one byte (0 = Optimize, 1 = Evaluate) and the request in
# protobuf binary form. The request's fields other than the graph come from
# a text-format skeleton encoded by protoc; the graph is appended as a
# GraphInput (field 1 of both requests: protobuf merges the two). Evaluate
# plans are sized by `gopt inspect`.
#
# usage: tests/fuzz/make_request_seeds.sh [BUILD_DIR] [SHARED_DATA]
#        (defaults: build, ../shared/data)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
data="${2:-${GOPT_SHARED_DATA:-$root/../shared/data}}"
out="$root/tests/fuzz/corpus/request"
protos="$root/proto"
gopt="$build/bin/gopt"
[[ -x "$gopt" ]] || { echo "no $gopt: build the gopt target first" >&2; exit 1; }
[[ -d "$data" ]] || { echo "no shared data at $data" >&2; exit 1; }
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

varint() {  # varint N: N as a protobuf base-128 varint
  local n=$1
  while ((n >= 128)); do
    printf "\\x$(printf %02x $(((n & 127) | 128)))"
    n=$((n >> 7))
  done
  printf "\\x$(printf %02x "$n")"
}

field() {  # field TAG_BYTE FILE: a length-delimited field holding FILE's bytes
  printf "\\x$1"
  varint "$(stat -c %s "$2")"
  cat "$2"
}

nodes() {  # nodes FILE FORMAT: top-level nodes of the imported graph
  "$gopt" inspect --json --format="$2" "$1" 2>/dev/null |
    sed -n 's/.*"nodes": *\([0-9][0-9]*\).*/\1/p' | head -1
}

# seed NAME KIND(0|1) GRAPH_FILE FORMAT NATIVE(0|1) < skeleton.txtpb
seed() {
  local name=$1 kind=$2 file=$3 format=$4 native=$5 message
  if [[ $kind == 0 ]]; then message=OptimizeRequest; else message=EvaluateRequest; fi
  protoc --proto_path="$protos" --encode="gopt.v1.$message" \
    gopt/v1/optimizer.proto > "$tmp/skeleton.pb"
  if [[ $native == 1 ]]; then
    field 0a "$file" > "$tmp/graph_input.pb"  # GraphInput.graph
  else
    field 12 "$file" > "$tmp/graph_input.pb"  # GraphInput.serialized
  fi
  {
    printf "\\x$(printf %02x "$kind")"
    cat "$tmp/skeleton.pb"
    field 0a "$tmp/graph_input.pb"  # request.graph
  } > "$out/seed_$name"
}

# plan_text N DEVICES: a Plan in text format: contiguous blocks of nodes per
# device (as an expert splits layers), descending priorities, and the first
# two nodes of every four fused when they share a device.
plan_text() {
  local n=$1 devices=$2 i
  echo "plan {"
  for ((i = 0; i < n; ++i)); do echo "  device: $((i * devices / n))"; done
  for ((i = 0; i < n; ++i)); do echo "  priority: $(((n - i) % 16))"; done
  for ((i = 0; i < n; ++i)); do
    local first=$((i - i % 4))
    if ((i % 4 < 2 && first + 1 < n &&
         first * devices / n == (first + 1) * devices / n)); then
      echo "  fusion_group: $((i / 4))"
    else
      echo "  fusion_group: -1"
    fi
  done
  echo "  method: \"seed-blocks\""
  echo "}"
}

# A machine described in full: two GPUs and a CPU, NVLink between the GPUs,
# PCIe otherwise.
explicit_topology='
topology { topology {
  name: "seed-2gpu-1cpu"
  source: "make_request_seeds.sh"
  devices { name: "gpu0" kind: "gpu" peak_f32_flops: 1.5e13 peak_f16_flops: 1.2e14
            memory_bandwidth_bytes_per_s: 9e11 memory_bytes: 17179869184
            launch_overhead_s: 5e-6 max_efficiency: 0.7 }
  devices { name: "gpu1" kind: "gpu" peak_f32_flops: 1.5e13 peak_f16_flops: 1.2e14
            memory_bandwidth_bytes_per_s: 9e11 memory_bytes: 17179869184
            launch_overhead_s: 5e-6 }
  devices { name: "cpu" kind: "cpu" peak_f32_flops: 1e11 peak_f64_flops: 5e10
            peak_int8_ops: 4e11 memory_bandwidth_bytes_per_s: 5e10
            memory_bytes: 68719476736 launch_overhead_s: 1e-6 max_efficiency: 0.5 }
  links { src: 0 dst: 1 bandwidth_bytes_per_s: 1.5e11 latency_s: 2e-6 }
  links { src: 1 dst: 0 bandwidth_bytes_per_s: 1.5e11 latency_s: 2e-6 }
  default_link { bandwidth_bytes_per_s: 1.6e10 latency_s: 1e-5 }
} }'

# A single slow device with little memory (plans may OOM).
tiny_topology='
topology { topology {
  name: "seed-tiny"
  devices { name: "npu" kind: "tpu" peak_f32_flops: 1e9
            memory_bandwidth_bytes_per_s: 1e9 memory_bytes: 1048576
            launch_overhead_s: 1e-4 }
} }'

hlo="$data/hlo"
onnx="$data/onnx"
tf="$data/tf_graphdef"

seed optimize_maml_baselines 0 "$hlo/maml_flax_train_step.hlo" hlo 0 <<EOF
graph { format: "hlo" name: "maml_flax_train_step.hlo" }
topology { preset: "v100x4-nvlink" }
tasks { placement: true scheduling: true fusion: true }
budget { mode: BASELINES_ONLY }
EOF

seed optimize_maml_methods 0 "$hlo/maml_flax_train_step.hlo" "" 0 <<EOF
topology { preset: "a100x8-nvlink" }
tasks { placement: true scheduling: true fusion: true layout: true }
budget { mode: ZERO_SHOT }
options { seed: 7 baseline_methods: "heft+critical-path+greedy+greedy"
          baseline_methods: "metis+fifo+none" baseline_methods: "m-etf+fifo"
          baseline_methods: "m-sct" baseline_methods: "expert"
          baseline_methods: "random+critical-path" baseline_methods: "round-robin" }
EOF

seed optimize_squeezenet_explicit 0 "$onnx/light_squeezenet.onnx" onnx 0 <<EOF
graph { format: "onnx" name: "light_squeezenet.onnx" }
$explicit_topology
budget { mode: FINE_TUNE fine_tune_steps: 3 seconds: 0.5 }
allow_partial_result: true
options { symbolic_dims { key: "batch" value: 2 } default_dim: 1 }
EOF

seed optimize_kws_cnn_tpu 0 "$tf/kws_DS_CNN_S.pb" graphdef 0 <<EOF
graph { format: "graphdef" name: "kws_DS_CNN_S.pb" }
topology { preset: "tpuv3x8" }
tasks { placement: true }
budget { mode: BASELINES_ONLY }
options { baseline_methods: "heft" baseline_methods: "metis" }
EOF

seed optimize_maml_tiny 0 "$hlo/maml_flax_train_step.hlo" "" 0 <<EOF
$tiny_topology
tasks { scheduling: true fusion: true }
budget { mode: BASELINES_ONLY }
EOF

seed optimize_jaxrl_h100 0 "$hlo/jaxrl_td_target.hlo" hlo 0 <<EOF
graph { format: "hlo" name: "jaxrl_td_target.hlo" }
topology { preset: "h100x8-nvlink" }
budget { mode: BASELINES_ONLY }
options { seed: 3 }
EOF

seed optimize_tpugraphs_ops_cpu 0 "$data/tpugraphs/op_tuning_data.pb" tpugraphs 0 <<EOF
graph { format: "tpugraphs" name: "op_tuning_data.pb" }
topology { preset: "cpu-host" }
budget { mode: BASELINES_ONLY }
EOF

seed optimize_shufflenet_pcie 0 "$onnx/light_shufflenet.onnx" onnx 0 <<EOF
graph { format: "onnx" name: "light_shufflenet.onnx" }
topology { preset: "v100x2-pcie" }
tasks { placement: true scheduling: true }
budget { mode: BASELINES_ONLY }
options { baseline_methods: "m-etf+critical-path" baseline_methods: "heft+fifo" }
EOF

"$gopt" convert --out="$tmp/small.pb" "$root/tests/fuzz/seeds/small.hlo" 2>/dev/null
seed optimize_native_graph 0 "$tmp/small.pb" "" 1 <<EOF
graph { name: "small.hlo" }
$explicit_topology
budget { mode: BASELINES_ONLY }
EOF

seed optimize_tfjs_native_topology 0 "$root/tests/fuzz/seeds/tfjs_model.json" tfjs 0 <<EOF
graph { format: "tfjs" name: "tfjs_model.json" }
$tiny_topology
EOF

# Issue #16's overflowing loop: trip count 2^62 around a costly body.
seed optimize_while_trip_2p62 0 "$root/tests/hostile/while_trip_2p62.hlo" hlo 0 <<EOF
graph { format: "hlo" name: "while_trip_2p62.hlo" }
topology { preset: "v100x4-nvlink" }
budget { mode: BASELINES_ONLY }
EOF

# Issue #37's hostile classes, small enough to replay in CI: 20,000 empty
# operator elements in each binary format (refused by the wire scan before
# any parse), and JSON nested 100,000 deep or made of empty node objects.
python3 - "$tmp" <<'PY'
import sys
tmp = sys.argv[1]
def delimited(tag, body):  # a length-delimited protobuf field
    n, out = len(body), bytearray([tag])
    while n >= 128:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out) + body
empty = b"\x0a\x00" * 20000  # field 1, length 0, repeated
files = {
    "onnx": delimited(0x3a, empty),  # ModelProto.graph{node}
    "graphdef": empty,  # GraphDef.node
    "hlo-proto": delimited(0x1a, b"\x12\x00" * 20000),  # computations{instructions}
    "gopt": b"\x1a\x00" * 20000,  # Graph.nodes
    "gopt-json-brackets": b'{"nodes":' + b"[" * 100000,
    "gopt-json-empty": b'{"nodes":[' + b",".join([b"{}"] * 20000) + b"]}",
    "tfjs-brackets": b'{"modelTopology":{"node":' + b"[" * 100000,
}
for name, data in files.items():
    with open(f"{tmp}/hostile_{name}", "wb") as f:
        f.write(data)
PY
for hostile in onnx:onnx graphdef:graphdef hlo-proto:hlo-proto gopt:gopt \
               gopt-json-brackets:gopt gopt-json-empty:gopt tfjs-brackets:tfjs; do
  name=${hostile%%:*} format=${hostile#*:}
  seed "hostile_${name//-/_}" 0 "$tmp/hostile_$name" "$format" 0 <<EOF
graph { format: "$format" name: "hostile_$name" }
topology { preset: "v100x4-nvlink" }
budget { mode: BASELINES_ONLY }
EOF
done

# Every format's hand-made seed (written by make_seeds.sh into the
# importers' corpora) as a request, so each format reaches the whole request
# path with a real graph: HloModuleProto, gopt.v1.Graph as JSON and binary,
# text GraphDef, ONNX with runtime shapes, TpuGraphs module tuning data.
corpus="$root/tests/fuzz/corpus"
for handmade in hlo-proto:hlo_proto/seed_module.pb gopt:gopt/seed_graph.json \
                gopt:gopt/seed_graph.pb graphdef:graphdef/seed_training.pbtxt \
                onnx:onnx/seed_runtime_shapes.onnx \
                tpugraphs:tpugraphs/seed_module_tuning.pb; do
  format=${handmade%%:*} file=$corpus/${handmade#*:}
  name=$(basename "$file"); name=${name//./_}
  seed "optimize_${format//-/_}_$name" 0 "$file" "$format" 0 <<EOF
graph { format: "$format" name: "$name" }
topology { preset: "v100x2-pcie" }
budget { mode: BASELINES_ONLY }
EOF
done

# Issue #37's other classes in every format, small: declared dimensions of
# 2^40 (tensors of 2^80 elements: element and byte counts overflow int64),
# and messages nested 100 levels deep (past the 64-level scan limit) through
# each format's recursive fields.
huge=1099511627776
sed "s/dimensions: [48] /dimensions: $huge /g" "$root/tests/fuzz/seeds/hlo_module.txtpb" |
  protoc --proto_path="$protos" --encode=xla.HloModuleProto xla/hlo.proto \
  > "$tmp/dims_hlo-proto"
sed "s/dimensions: [48] /dimensions: $huge /g; s/dimensions: 32 /dimensions: $((huge << 22)) /" \
  "$root/tests/fuzz/seeds/module_tuning.txtpb" |
  protoc --proto_path="$protos" --encode=tpu_graphs.ModuleTuningData \
  tpu_graphs/tuning.proto > "$tmp/dims_tpugraphs"
sed "s/size: 8 /size: $huge /g" "$root/tests/fuzz/seeds/graphdef.txtpb" \
  > "$tmp/dims_graphdef"
sed "s/\"size\": \"1*6*\"/\"size\": \"$huge\"/g; s/\[16, 4\]/[$huge, 4]/" \
  "$root/tests/fuzz/seeds/tfjs_model.json" > "$tmp/dims_tfjs"
sed "s/\"[48]\"/\"$huge\"/g" "$corpus/gopt/seed_graph.json" > "$tmp/dims_gopt"
protoc --proto_path="$protos" --encode=gopt.onnx.ModelProto onnx/onnx.proto \
  > "$tmp/dims_onnx" <<EOF
ir_version: 8
opset_import { version: 13 }
graph {
  name: "huge_dims"
  input { name: "x" type { tensor_type { elem_type: 1 shape {
    dim { dim_value: $huge } dim { dim_value: $huge } } } } }
  initializer { name: "w" data_type: 1 dims: $huge dims: $huge }
  node { input: "x" input: "w" output: "y" op_type: "MatMul" name: "mm" }
  node { input: "y" input: "x" output: "z" op_type: "Add" name: "add" }
  output { name: "z" }
}
EOF
cat > "$tmp/dims_hlo" <<EOF
HloModule huge_dims
ENTRY %main (p: f32[$huge,$huge]) -> f32[$huge,$huge] {
  %p = f32[$huge,$huge]{1,0} parameter(0)
  %d = f32[$huge,$huge]{1,0} dot(%p, %p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %a = f32[$huge,$huge]{1,0} add(%d, %p)
}
EOF
python3 - "$tmp" <<'PY'
import sys
tmp = sys.argv[1]
def delimited(tag, body):  # a length-delimited protobuf field
    n, out = len(body), bytearray([tag])
    while n >= 128:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out) + body
def nest(levels, wrap, inner=b""):  # wrap(inner) applied `levels` times
    for _ in range(levels):
        inner = wrap(inner)
    return inner
levels = 100
def attr_entry(value):  # a map<string, AttrValue> entry with key "a"
    return delimited(0x0a, b"a") + delimited(0x12, value)
files = {
    # ModelProto.graph, then GraphProto.node -> NodeProto.attribute ->
    # AttributeProto.g (a subgraph in a subgraph...).
    "onnx": delimited(0x3a, nest(levels, lambda g: delimited(
        0x0a, delimited(0x2a, delimited(0x32, g))))),
    # computations -> instructions -> shape -> tuple_shapes...
    "hlo-proto": delimited(0x1a, delimited(0x12, delimited(
        0x1a, nest(levels, lambda s: delimited(0x22, s))))),
    # ModuleTuningData.module, then as hlo-proto.
    "tpugraphs": delimited(0x0a, delimited(0x1a, delimited(0x12, delimited(
        0x1a, nest(levels, lambda s: delimited(0x22, s)))))),
    # Graph.nodes -> outputs -> tuple_elements...
    "gopt": delimited(0x1a, delimited(0x2a, nest(
        levels, lambda t: delimited(0x22, t)))),
    # GraphDef.node -> attr {key value: AttrValue.func -> NameAttrList.attr
    # {key value: ...}}.
    "graphdef": delimited(0x0a, delimited(0x2a, attr_entry(nest(
        levels, lambda v: delimited(0x52, delimited(0x12, attr_entry(v))))))),
    "hlo": b"HloModule nested\nENTRY %main () -> f32[] {\n  %p = " +
           b"(" * levels + b"f32[]" + b")" * levels + b" parameter(0)\n" +
           b"  ROOT %c = f32[] constant(0)\n}\n",
    "graphdef-text": b'node { name: "n" op: "NoOp" ' +
                     b'attr { key: "a" value { func { name: "f" ' * levels +
                     b"} } }" * levels + b" }\n",
}
for name, data in files.items():
    with open(f"{tmp}/nest_{name}", "wb") as f:
        f.write(data)
PY
for hostile in dims_hlo:hlo dims_hlo-proto:hlo-proto dims_onnx:onnx \
               dims_graphdef:graphdef dims_tfjs:tfjs dims_gopt:gopt \
               dims_tpugraphs:tpugraphs nest_hlo:hlo nest_hlo-proto:hlo-proto \
               nest_onnx:onnx nest_graphdef:graphdef \
               nest_graphdef-text:graphdef nest_gopt:gopt \
               nest_tpugraphs:tpugraphs; do
  name=${hostile%%:*} format=${hostile#*:}
  seed "hostile_${name//-/_}" 0 "$tmp/$name" "$format" 0 <<EOF
graph { format: "$format" name: "$name" }
topology { preset: "v100x4-nvlink" }
budget { mode: BASELINES_ONLY }
EOF
done

n=$(nodes "$hlo/maml_flax_train_step.hlo" hlo)
seed evaluate_maml_trace 1 "$hlo/maml_flax_train_step.hlo" hlo 0 <<EOF
graph { format: "hlo" name: "maml_flax_train_step.hlo" }
topology { preset: "v100x4-nvlink" }
$(plan_text "$n" 4)
include_trace: true
EOF

n=$(nodes "$onnx/light_squeezenet.onnx" onnx)
seed evaluate_squeezenet_explicit 1 "$onnx/light_squeezenet.onnx" onnx 0 <<EOF
graph { format: "onnx" name: "light_squeezenet.onnx" }
$explicit_topology
$(plan_text "$n" 3)
options { symbolic_dims { key: "batch" value: 4 } }
EOF

n=$(nodes "$tf/kws_DS_CNN_S.pb" graphdef)
seed evaluate_kws_cnn_tiny 1 "$tf/kws_DS_CNN_S.pb" graphdef 0 <<EOF
graph { format: "graphdef" name: "kws_DS_CNN_S.pb" }
$tiny_topology
$(plan_text "$n" 1)
include_trace: true
EOF

n=$(nodes "$tmp/small.pb" gopt)
seed evaluate_native_graph 1 "$tmp/small.pb" "" 1 <<EOF
graph { name: "small.hlo" }
topology { preset: "v100x2-pcie" }
$(plan_text "$n" 2)
EOF

echo "$(ls "$out" | wc -l) request seeds in $out ($(du -sh "$out" | cut -f1))"
