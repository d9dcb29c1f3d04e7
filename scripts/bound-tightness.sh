#!/usr/bin/env bash
# How tight gopt's lower bounds are on the real graphs: per graph in the
# shared data, the plan `gopt optimize` chooses (its default search) on each
# topology, its step time over the bound for any plan Simulate accepts and
# over the bound for plans within the kernel fusion rules (what gopt's
# planners obey; simulator/lower_bound.h), and the geometric means. A ratio
# below 1 would mean a bound is wrong. Run after `make build`; takes about a
# minute per topology on two cores.
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
for topology in "${TOPOLOGIES[@]}"; do
  for graph in "${GRAPHS[@]}"; do
    "$BUILD/bin/gopt" optimize "$graph" --topology="$topology" --json \
      2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(json.dumps({"graph": sys.argv[1], "topology": sys.argv[2],
                  "step_s": r["step_time_s"], "any_s": r["lower_bound_s"],
                  "rules_s": r["kernel_rules_lower_bound_s"],
                  "method": r["method"]}))' "${graph#"$DATA"/}" "$topology" 2>/dev/null \
      || echo "{\"graph\": \"${graph#"$DATA"/}\", \"topology\": \"$topology\", \"error\": true}"
  done
done | python3 -c '
import json, math, sys
rows = [json.loads(line) for line in sys.stdin]
print("%-16s %-48s %11s %11s %8s %11s %8s" % ("topology", "graph", "chosen ms",
      "rules ms", "ratio", "any ms", "ratio"))
by_topology = {}
for r in rows:
    if r.get("error"):
        print("%-16s %-48s  import or optimize failed" % (r["topology"], r["graph"]))
        continue
    rules = r["step_s"] / r["rules_s"] if r["rules_s"] > 0 else float("nan")
    any_ = r["step_s"] / r["any_s"] if r["any_s"] > 0 else float("nan")
    print("%-16s %-48s %11.4f %11.4f %8.2f %11.4f %8.2f" % (r["topology"],
          r["graph"], r["step_s"] * 1e3, r["rules_s"] * 1e3, rules,
          r["any_s"] * 1e3, any_))
    by_topology.setdefault(r["topology"], []).append((rules, any_))
for topology, ratios in by_topology.items():
    ok = [x for x in ratios if x[0] > 0 and x[1] > 0]
    g = lambda i: math.exp(sum(math.log(x[i]) for x in ok) / len(ok))
    print("%s: geomean chosen / bound over %d graphs: %.2f (kernel rules), "
          "%.2f (any plan); smallest ratio %.3f" % (topology, len(ok), g(0),
          g(1), min(min(x) for x in ok)))
'
