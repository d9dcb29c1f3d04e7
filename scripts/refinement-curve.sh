#!/usr/bin/env bash
# Idle refinement of the plan store (issue #41; docs/plan-store.md): a
# benchmark that prints measurements, not a test.
#   1. reference: for each graph, the best plan `gopt_plan_search_benchmark`
#      finds from the best baseline with a large budget (REF_ROUNDS rounds
#      of 16 candidates, seed 1: deterministic);
#   2. gopt-server with a SQLite plan store and --refine_idle
#      (--refine_cpu_share=SHARE) on loopback; one `gopt optimize` per graph
#      (the server's default budget) stores the first plan;
#   3. every minute for MINUTES, the stored plan of each graph
#      (`gopt plans list --json`) as a ratio to the reference; then, per
#      graph, the first minute at which it is within 1% of the reference.
# The server takes the bundled policies (policy/pretrained), as `make serve`.
# Usage: scripts/refinement-curve.sh   (after building gopt, gopt-server and
# gopt_plan_search_benchmark)
# Environment: BUILD (build), GRAPHS (three real graphs under
# ../shared/data, comma-separated), TOPOLOGY (v100x4-nvlink), MINUTES (10),
# SHARE (1.0), REF_ROUNDS (1024), PORT (50190).
set -euo pipefail

BUILD=${BUILD:-build}
DATA=../shared/data
GRAPHS=${GRAPHS:-$DATA/hlo/jaxrl_td_target.hlo,$DATA/tfjs/movenet-multipose.json,$DATA/tf_graphdef/kws_LSTM_S.pb}
TOPOLOGY=${TOPOLOGY:-v100x4-nvlink}
MINUTES=${MINUTES:-10}
SHARE=${SHARE:-1.0}
REF_ROUNDS=${REF_ROUNDS:-1024}
PORT=${PORT:-50190}
GOPT="$BUILD/bin/gopt"
# Every process started here: the CLI's OpenMP threads would otherwise spin
# on the two cores beside the server being measured.
export OMP_WAIT_POLICY=PASSIVE
SERVER="$BUILD/bin/gopt-server"
SEARCH="$BUILD/bin/gopt_plan_search_benchmark"

for binary in "$GOPT" "$SERVER" "$SEARCH"; do
  [[ -x "$binary" ]] || { echo "refinement-curve: $binary is missing" >&2; exit 1; }
done
IFS=, read -r -a graphs <<<"$GRAPHS"
for graph in "${graphs[@]}"; do
  [[ -f "$graph" ]] || { echo "refinement-curve: $graph is missing" >&2; exit 1; }
done

work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== reference: plan search from the best baseline, $REF_ROUNDS rounds of 16, seed 1"
declare -A reference_ms
declare -A entry_key
for graph in "${graphs[@]}"; do
  "$SEARCH" --graph="$graph" --topologies="$TOPOLOGY" --rounds="$REF_ROUNDS" \
    --marks="$REF_ROUNDS" --threads=2 >"$work/search.txt" 2>&1
  # "..., best baseline 0.1654 ms (...)" and "seed 1:  r1024 0.7464 (+3)".
  reference_ms[$graph]=$(python3 - "$work/search.txt" "$REF_ROUNDS" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
baseline = float(re.search(r"best baseline ([0-9.]+) ms", text).group(1))
ratio = float(re.search(r"seed 1: .*r%s ([0-9.]+)" % sys.argv[2], text).group(1))
print(baseline * ratio)
EOF
)
  echo "  $graph: best baseline x search = ${reference_ms[$graph]} ms"
done

echo "== gopt-server --refine_idle --refine_cpu_share=$SHARE, SQLite store"
"$SERVER" --listen="127.0.0.1:$PORT" --metrics_listen= \
  --plan_store="$work/plans.sqlite" --refine_idle --refine_cpu_share="$SHARE" \
  >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  "$GOPT" health --server="127.0.0.1:$PORT" >/dev/null 2>&1 && break
  sleep 0.5
done
"$GOPT" health --server="127.0.0.1:$PORT" >/dev/null || {
  cat "$work/server.log" >&2
  exit 1
}
for graph in "${graphs[@]}"; do
  "$GOPT" optimize "$graph" --server="127.0.0.1:$PORT" --topology="$TOPOLOGY" \
    --json >"$work/first.json"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("  %s: first answer %s, %.4f ms" % (sys.argv[2], r["method"], 1e3 * r["step_time_s"]))
' "$work/first.json" "$graph"
  entry_key[$graph]=$(python3 -c '
import json, sys
print(json.load(open(sys.argv[1]))["store_entry"]["key"])' "$work/first.json")
done

# One line per minute: the stored plan of each graph over its reference.
snapshot() {
  "$GOPT" plans list --plan_store="$work/plans.sqlite" --json >"$work/list.json"
  python3 - "$work/list.json" "$1" "${graphs[@]}" <<EOF
import json, sys
entries = {e["key"]: e for e in json.load(open(sys.argv[1]))}
reference = {$(for g in "${graphs[@]}"; do printf '"%s": %s, ' "$g" "${reference_ms[$g]}"; done)}
key = {$(for g in "${graphs[@]}"; do printf '"%s": "%s", ' "$g" "${entry_key[$g]}"; done)}
cells = []
for graph in sys.argv[3:]:
    e = entries.get(key[graph])
    cells.append("%.4f" % (1e3 * e["step_time_s"] / reference[graph]) if e else "-")
print(sys.argv[2] + "\t" + "\t".join(cells))
EOF
}

echo "== stored plan / reference, per minute of refinement"
printf 'minute'
for graph in "${graphs[@]}"; do printf '\t%s' "$(basename "$graph")"; done
printf '\n'
snapshot 0 | tee "$work/curve.tsv"
for minute in $(seq 1 "$MINUTES"); do
  sleep 60
  snapshot "$minute" | tee -a "$work/curve.tsv"
done

echo "== minutes to within 1% of the reference"
python3 - "$work/curve.tsv" "${graphs[@]}" <<'EOF'
import sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().split("\n") if line]
for column, graph in enumerate(sys.argv[2:], start=1):
    within = [int(row[0]) for row in rows
              if row[column] != "-" and float(row[column]) <= 1.01]
    print("  %s: %s" % (graph, "minute %d" % within[0] if within
                          else "not within %s minutes" % rows[-1][0]))
EOF
echo "== the server's refinement log"
grep -i refin "$work/server.log" | tail -n 20 || true
