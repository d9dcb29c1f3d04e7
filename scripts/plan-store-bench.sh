#!/usr/bin/env bash
# The plan store's numbers (docs/plan-store.md): a benchmark that prints
# measurements, not a test. Over loopback gRPC with `gopt load`:
#   1. cold: gopt-server without a store, the same request again and again;
#   2. hit, exact request bytes: a SQLite store, answers kept in memory
#      (the memo), at concurrency 1 (latency) and CONCURRENCY (throughput;
#      by Little's law p99 at 32 in flight is at least 32 / throughput);
#   3. hit with import: the graph with every node renamed (another exact
#      key, the same fingerprint), --plan_store_kept_answers=0 so every
#      request imports, beside the import time of that graph; one at a
#      time, what a hit adds to the server's own import time;
#   4. two gopt-server replicas on one redis-server: a plan improved through
#      one (a request with more effort) is served by the other.
# Usage: scripts/plan-store-bench.sh   (after building gopt-server and gopt)
# Environment: BUILD (build), GRAPH (../shared/data/hlo/
# nux_flow_jit_loss9581.hlo, 9,468 nodes), TOPOLOGY (v100x4-nvlink),
# CONCURRENCY (32), DURATION seconds per load (20), SERIAL (requests of
# case 3 sent one at a time: 100), COLD_BUDGET (the cold
# load's budget flags: --baselines_only; empty = the server's policies
# zero-shot), PORT (base port, 50170).
set -euo pipefail

BUILD=${BUILD:-build}
GRAPH=${GRAPH:-../shared/data/hlo/nux_flow_jit_loss9581.hlo}
TOPOLOGY=${TOPOLOGY:-v100x4-nvlink}
CONCURRENCY=${CONCURRENCY:-32}
DURATION=${DURATION:-20}
SERIAL=${SERIAL:-100}
COLD_BUDGET=${COLD_BUDGET---baselines_only}
PORT=${PORT:-50170}
GOPT="$BUILD/bin/gopt"
# Every process started here: the CLI's OpenMP threads would otherwise spin
# on the two cores beside the server being measured.
export OMP_WAIT_POLICY=PASSIVE
SERVER="$BUILD/bin/gopt-server"

for binary in "$GOPT" "$SERVER" /usr/bin/redis-server; do
  [[ -x "$binary" ]] || { echo "plan-store-bench: $binary is missing" >&2; exit 1; }
done
[[ -f "$GRAPH" ]] || { echo "plan-store-bench: $GRAPH is missing" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# start_server PORT FLAGS...: gopt-server on 127.0.0.1:PORT, until healthy.
start_server() {
  local port=$1
  shift
  # 32 requests of 2 MB in flight need more than gRPC's default memory
  # quota (2 x --max_message_bytes + 24 MiB), which resets streams with
  # RESOURCE_EXHAUSTED past it.
  "$SERVER" --listen="127.0.0.1:$port" --metrics_listen= \
    --grpc_memory_bytes=$((256 << 20)) "$@" \
    >"$work/server-$port.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 600); do
    "$GOPT" health --server="127.0.0.1:$port" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "gopt-server on $port never became healthy:" >&2
  cat "$work/server-$port.log" >&2
  exit 1
}

stop_servers() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}

# load PORT GRAPH FLAGS...: one `gopt load`, its report (concurrency
# $IN_FLIGHT, default CONCURRENCY).
load() {
  local port=$1 graph=$2
  shift 2
  "$GOPT" load --server="127.0.0.1:$port" --graph="$graph" \
    --topology="$TOPOLOGY" --concurrency="${IN_FLIGHT:-$CONCURRENCY}" \
    --duration="$DURATION" "$@"
}

# one PORT GRAPH FLAGS...: one optimize through the server, as JSON.
one() {
  local port=$1 graph=$2
  shift 2
  "$GOPT" optimize "$graph" --server="127.0.0.1:$port" \
    --topology="$TOPOLOGY" --json "$@"
}

summary() {
  python3 -c '
import json, sys
r = json.load(sys.stdin)
t = {x["stage"]: x["seconds"] for x in r.get("timings", [])}
print("  method=%s step_time_s=%s store_result=%s from_store=%s stored=%s "
      "import_ms=%.1f total_ms=%.1f" % (
    r.get("method"), r.get("step_time_s"), r.get("store_result"),
    r.get("from_store"), r.get("stored"),
    1e3 * t.get("import", 0), 1e3 * t.get("total", 0)))'
}

echo "== graph $GRAPH on $TOPOLOGY, concurrency $CONCURRENCY, ${DURATION}s each"
echo "== 1. cold (no plan store; budget: ${COLD_BUDGET:-zero-shot})"
start_server "$PORT" --plan_store=none
load "$PORT" "$GRAPH" $COLD_BUDGET
stop_servers

echo "== 2. hit, exact request bytes (SQLite store, answers kept)"
start_server "$PORT" --plan_store="$work/plans.sqlite"
one "$PORT" "$GRAPH" $COLD_BUDGET | summary
IN_FLIGHT=1 load "$PORT" "$GRAPH" $COLD_BUDGET
load "$PORT" "$GRAPH" $COLD_BUDGET
stop_servers

echo "== 3. hit with import (renamed nodes; every request imports)"
renamed="$work/renamed.hlo"
sed 's/%/%renamed_/g' "$GRAPH" >"$renamed"
start_server "$PORT" --plan_store="$work/plans.sqlite" \
  --plan_store_kept_answers=0
echo "  import without the store (--store=skip):"
one "$PORT" "$renamed" $COLD_BUDGET --store=skip | summary
echo "  the renamed graph through the store:"
one "$PORT" "$renamed" $COLD_BUDGET | summary
echo "  at concurrency 1, $SERIAL requests one after another: the server's own"
echo "  import time and what the hit adds to it (timings: total - import):"
for i in $(seq 1 "$SERIAL"); do
  one "$PORT" "$renamed" $COLD_BUDGET >"$work/serial-$i.json"
done
python3 - "$work" "$SERIAL" <<'EOF_PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
imports, added = [], []
for i in range(1, n + 1):
    r = json.load(open("%s/serial-%d.json" % (work, i)))
    t = {x["stage"]: 1e3 * x["seconds"] for x in r["timings"]}
    imports.append(t["import"])
    added.append(t["total"] - t["import"])
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]
print("  import: p50 %.1f ms, p99 %.1f ms; hit beyond the import: p50 %.1f ms,"
      " p99 %.1f ms" % (pct(imports, .5), pct(imports, .99), pct(added, .5),
                        pct(added, .99)))
EOF_PY
load "$PORT" "$renamed" $COLD_BUDGET
stop_servers

echo "== 4. two replicas on one redis-server"
redis_port=$((PORT + 9))
/usr/bin/redis-server --port "$redis_port" --bind 127.0.0.1 --save "" \
  --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
sleep 1
start_server "$PORT" --plan_store="redis://127.0.0.1:$redis_port/0"
start_server "$((PORT + 1))" --plan_store="redis://127.0.0.1:$redis_port/0"
echo "  replica A, baselines only (stores the best baseline):"
one "$PORT" "$GRAPH" --baselines_only | summary
echo "  replica A, zero-shot policies (warm start; writes back a better plan):"
one "$PORT" "$GRAPH" | summary
echo "  replica B, baselines only (served from the store):"
one "$((PORT + 1))" "$GRAPH" --baselines_only | summary
stop_servers
