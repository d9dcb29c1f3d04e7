#!/usr/bin/env bash
# Does the learned runtime model make better decisions? For each held-out
# graph, gopt optimize chooses a plan twice — priced by the learned model
# (TOPOLOGY, written by gopt calibrate --learn) and by the calibrated roofline
# alone (its DATA/calibrated.json) — and gopt measure runs on this host's
# executors: the default plan, the best baseline as the learned model ranks
# the baselines, and both chosen plans. Prints one row per graph (measured
# ms; the chosen plans' ratio to the default).
#
#   scripts/runtime-model-eval.sh host.json a.onnx b.pb ...
#   BUILD_DIR=/path/to/build scripts/runtime-model-eval.sh host.json ...
#   VERIFY=3 scripts/runtime-model-eval.sh host.json ...   # optimize --verify=3:
#                                    the top 3 candidates measured, the
#                                    measured best kept (never the default's
#                                    loser)
#
# Needs a build. The numbers are only as quiet as the host: run it on an
# otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
gopt="$build/bin/gopt"
[[ -x "$gopt" ]] || { echo "missing $gopt: build first" >&2; exit 2; }
[[ $# -ge 2 ]] || { echo "usage: $0 TOPOLOGY.json GRAPH..." >&2; exit 64; }
topology=$1
shift
stem=${topology%.json}
roofline="$stem.runtime-data/calibrated.json"
[[ -f "$roofline" ]] || { echo "missing $roofline (gopt calibrate --learn writes it)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

measured_ms() {  # FILE TOPOLOGY (--method=M | --plan=P): the measured median, ms
  "$gopt" measure "$1" --topology="$2" "$3" --json |
    sed -n 's/.*"measured_step_time_s": \([0-9.e+-]*\).*/\1/p' |
    awk '{ printf "%.2f", $1 * 1000 }'
}

printf "%-28s %9s %9s %9s %9s %8s %8s\n" graph default best-bl learned roofline l/def r/def
for graph in "$@"; do
  name=$(basename "$graph")
  "$gopt" optimize "$graph" --topology="$topology" --plan_store=none \
    --verify="${VERIFY:-0}" --out="$out/$name.learned.json" > /dev/null
  "$gopt" optimize "$graph" --topology="$roofline" --plan_store=none \
    --verify="${VERIFY:-0}" --out="$out/$name.roofline.json" > /dev/null
  default=$(measured_ms "$graph" "$topology" --method=single)
  best=$(measured_ms "$graph" "$topology" --method=best-baseline)
  learned=$(measured_ms "$graph" "$topology" --plan="$out/$name.learned.json")
  roof=$(measured_ms "$graph" "$topology" --plan="$out/$name.roofline.json")
  awk -v n="$name" -v d="$default" -v b="$best" -v l="$learned" -v r="$roof" \
    'BEGIN { printf "%-28s %9s %9s %9s %9s %8.3f %8.3f\n", n, d, b, l, r, l / d, r / d }'
done
