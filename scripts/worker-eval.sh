#!/usr/bin/env bash
# Does the simulator predict what runs? Calibrates this host's executors
# (gopt calibrate), lets gopt optimize choose a plan for a few real graphs on
# the calibrated topology, then runs ~20 candidate plans per graph for real
# (gopt_executor_eval): measured vs predicted step times (calibrated and
# uncalibrated roofline), Spearman rank correlation and MAPE, and the
# measured speedup of gopt's chosen plan over the default plan. Finally the
# share of nodes and FLOPs that run as real LibTorch ops for every graph in
# the shared data folder.
#
# Needs a build (cmake --build build) and ../shared/data (or
# GOPT_SHARED_DATA). Takes a few minutes on a 2-core host; the numbers are
# only as quiet as the host: run it on an otherwise idle machine.
#
#   scripts/worker-eval.sh            # writes under /tmp/gopt-worker-eval
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
data=${GOPT_SHARED_DATA:-../shared/data}
out=${OUT_DIR:-/tmp/gopt-worker-eval}
graphs=(${GRAPHS:-onnx/light_squeezenet.onnx onnx/light_shufflenet.onnx
        tf_graphdef/kws_DS_CNN_S.pb hlo/jaxrl_td_target.hlo})
for bin in gopt gopt_executor_eval; do
  [[ -x "$build/bin/$bin" ]] || { echo "missing $build/bin/$bin: build first" >&2; exit 2; }
done
[[ -d "$data" ]] || { echo "missing $data (set GOPT_SHARED_DATA)" >&2; exit 2; }
mkdir -p "$out"

echo "== gopt calibrate --out=$out/calibrated.json"
"$build/bin/gopt" calibrate --out="$out/calibrated.json"

graph_list=()
chosen=()
for g in "${graphs[@]}"; do
  path="$data/$g"
  plan="$out/$(basename "$g").plan.json"
  echo "== gopt optimize $path --topology=$out/calibrated.json --out=$plan"
  "$build/bin/gopt" optimize "$path" --topology="$out/calibrated.json" \
    --out="$plan" | tail -n 3
  graph_list+=("$path")
  chosen+=("$path=$plan")
done

echo "== gopt_executor_eval (measured vs predicted)"
"$build/bin/gopt_executor_eval" --topology="$out/calibrated.json" \
  --graph="$(IFS=,; echo "${graph_list[*]}")" \
  --chosen="$(IFS=,; echo "${chosen[*]}")"

echo "== real-op fractions of every graph in $data"
mapfile -t files < <(find "$data" -type f \( -name '*.hlo' -o -name '*.onnx' \
  -o -name '*.pb' -o -name '*.json' \) | sort)
"$build/bin/gopt_executor_eval" --real_ops="$(IFS=,; echo "${files[*]}")"
