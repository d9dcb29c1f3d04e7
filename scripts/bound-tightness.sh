#!/usr/bin/env bash
# How tight gopt's lower bound is on the real graphs: per graph in the
# shared data, the plan `gopt optimize` chooses (its default search) on each
# topology, its step time over the bound (which holds for every plan the
# simulator accepts; simulator/lower_bound.h), and the geometric mean. A
# ratio below 1 would mean the bound is wrong. Graphs whose symbolic
# dimensions need values get them (the same as the import tests use). Run
# after `make build`; takes a few minutes per topology on two cores.
#
#   scripts/bound-tightness.sh [BUILD_DIR] [TOPOLOGY...]
#   (default: build v100x4-nvlink)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
shift || true
TOPOLOGIES=("$@")
[ ${#TOPOLOGIES[@]} -eq 0 ] && TOPOLOGIES=(v100x4-nvlink)
DATA="${GOPT_SHARED_DATA:-../shared/data}"
GRAPHS=()
for f in "$DATA"/hlo/*.hlo "$DATA"/onnx/*.onnx "$DATA"/tf_graphdef/*.pb \
         "$DATA"/tfjs/*.json "$DATA"/tpugraphs/*.pb; do
  [ -f "$f" ] && GRAPHS+=("$f")
done
if [ ${#GRAPHS[@]} -eq 0 ]; then
  echo "no graphs under $DATA (set GOPT_SHARED_DATA)" >&2
  exit 2
fi
# The --dim values a graph needs (an image and an audio window of real size).
dims_for() {
  case "$(basename "$1")" in
    ch_ppocr_mobile_v2.0_cls_infer.onnx)
      echo "--dim=p2o.DynamicDimension.1=48,p2o.DynamicDimension.2=192" ;;
    silero_vad_legacy.onnx) echo "--dim=sequence=512" ;;
  esac
}
for topology in "${TOPOLOGIES[@]}"; do
  for graph in "${GRAPHS[@]}"; do
    dims=$(dims_for "$graph")
    # shellcheck disable=SC2086
    "$BUILD/bin/gopt" optimize "$graph" --topology="$topology" --json $dims \
      2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(json.dumps({"graph": sys.argv[1], "topology": sys.argv[2],
                  "step_s": r["step_time_s"], "bound_s": r["lower_bound_s"],
                  "fits_s": r.get("fits_in_memory_lower_bound_s", 0),
                  "nodes": int(r.get("num_nodes", 0)),
                  "method": r["method"]}))' "${graph#"$DATA"/}" "$topology" 2>/dev/null \
      || echo "{\"graph\": \"${graph#"$DATA"/}\", \"topology\": \"$topology\", \"error\": true}"
  done
done | python3 -c '
import json, math, sys
rows = [json.loads(line) for line in sys.stdin]
print("%-16s %-48s %7s %11s %11s %8s" % ("topology", "graph", "nodes",
      "chosen ms", "bound ms", "ratio"))
by_topology = {}
for r in rows:
    if r.get("error"):
        print("%-16s %-48s  import or optimize failed" % (r["topology"], r["graph"]))
        continue
    ratio = r["step_s"] / r["bound_s"] if r["bound_s"] > 0 else float("nan")
    note = ""
    if r["fits_s"] > r["bound_s"]:
        note = "  (fits-in-memory bound %.4f ms)" % (r["fits_s"] * 1e3)
    print("%-16s %-48s %7d %11.4f %11.4f %8.2f%s" % (r["topology"], r["graph"],
          r["nodes"], r["step_s"] * 1e3, r["bound_s"] * 1e3, ratio, note))
    by_topology.setdefault(r["topology"], []).append(ratio)
for topology, ratios in by_topology.items():
    ok = [x for x in ratios if x > 0]
    g = math.exp(sum(math.log(x) for x in ok) / len(ok))
    print("%s: geomean chosen / bound over %d graphs: %.2f; smallest ratio "
          "%.3f, largest %.2f" % (topology, len(ok), g, min(ok), max(ok)))
'
