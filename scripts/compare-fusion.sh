#!/usr/bin/env bash
# Before/after a change to the kernel rules or the fusers: per graph and
# machine, the best baseline's step time and single+fifo+greedy's (step
# time, kernels, lower bound) with an OLD gopt binary (built before the
# change) and a NEW one; every real graph in the shared data and every
# generator preset, on v100x4-nvlink and h100x8-nvlink. Prints one Markdown
# table row per pair:
#   | machine | graph | best ms old | new | new/old | single+greedy ms old |
#   new | new/old | kernels old -> new | lower bound ms old -> new |
# ("-": no valid plan that fits). About 6 minutes on two cores.
#
#   scripts/compare-fusion.sh OLD_GOPT [NEW_GOPT]   (default build/bin/gopt)
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:?usage: scripts/compare-fusion.sh OLD_GOPT [NEW_GOPT]}"
NEW="${2:-build/bin/gopt}"
DATA="${GOPT_SHARED_DATA:-../shared/data}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The --dim values a graph needs (as scripts/bound-tightness.sh).
dims_for() {
  case "$(basename "$1")" in
    ch_ppocr_mobile_v2.0_cls_infer.onnx)
      echo "--dim=p2o.DynamicDimension.1=48,p2o.DynamicDimension.2=192" ;;
    silero_vad_legacy.onnx) echo "--dim=sequence=512" ;;
  esac
}
presets=$("$NEW" generate list | sed -n 's/^  \([a-z0-9_-]*\):.*/gen:\1/p')
for topology in v100x4-nvlink h100x8-nvlink; do
  for graph in "$DATA"/hlo/*.hlo "$DATA"/onnx/*.onnx "$DATA"/tf_graphdef/*.pb \
               "$DATA"/tfjs/*.json $presets; do
    dims=$(dims_for "$graph")
    file="$graph"
    if [[ $graph == gen:* ]]; then
      file="$WORK/${graph#gen:}.gopt"
      [ -f "$file" ] ||
        "$NEW" generate --preset="${graph#gen:}" --out="$file" >/dev/null 2>&1
    fi
    for build in old new; do
      bin=$OLD
      [ $build = new ] && bin=$NEW
      # shellcheck disable=SC2086
      "$bin" bench --topology=$topology --graph="$graph" --json $dims \
        --methods=best-baseline,single+fifo+greedy 2>/dev/null \
        >"$WORK/bench-$build.json" || true
      # shellcheck disable=SC2086
      "$bin" simulate "$file" --topology=$topology --json $dims \
        --method=single+fifo+greedy 2>/dev/null >"$WORK/sim-$build.json" || true
    done
    python3 - "$topology" "${graph##*/}" "$WORK" <<'PY'
import json, sys
topology, graph, work = sys.argv[1:]
def load(name):
    try:
        return json.load(open(f"{work}/{name}"))
    except Exception:
        return {}
def step_ms(bench, method):
    rows = {r["method"]: r for r in bench.get("rows", [])}
    row = rows.get(method, {})
    if not row.get("valid") or row.get("oom", True):
        return None
    return row["step_time_s"] * 1e3
old, new = load("bench-old.json"), load("bench-new.json")
sim_old, sim_new = load("sim-old.json"), load("sim-new.json")
ms = lambda v: "-" if v is None else "%.4f" % v
ratio = lambda a, b: "-" if a is None or b is None else "%.3f" % (b / a)
bound = lambda s: "-" if "lower_bound_s" not in s else "%.4f" % (s["lower_bound_s"] * 1e3)
cells = [topology, graph]
for method in ("best-baseline", "single+fifo+greedy"):
    a, b = step_ms(old, method), step_ms(new, method)
    cells += [ms(a), ms(b), ratio(a, b)]
cells.append("%s -> %s" % (sim_old.get("kernels", "-"), sim_new.get("kernels", "-")))
cells.append("%s -> %s" % (bound(sim_old), bound(sim_new)))
print("| " + " | ".join(cells) + " |")
PY
  done
done
