#!/usr/bin/env bash
# Soak test of gopt-server: starts a server on free loopback ports (or
# targets one already running on loopback), runs gopt-soak against it
# (mixed real and malformed requests, concurrency 8, bounded in time and
# count), prints gopt-soak's report, then stops the server it started with
# SIGTERM and reports how it exited. Not run in CI; see tests/fuzz/README.md.
#
# usage: scripts/soak.sh [--duration SECONDS] [--requests N]
#                        [--concurrency N] [--build DIR] [--data DIR]
#                        [--target 127.0.0.1:PORT --pid PID]
#                        [-- extra gopt-server flags]
#   defaults: 1800 s, 200000 requests, concurrency 8, build/, ../shared/data
# The exit status is gopt-soak's (0 = PASS), or 1 when the server it started
# did not exit cleanly on SIGTERM.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
duration=1800
requests=200000
concurrency=8
build="$root/build"
data="${GOPT_SHARED_DATA:-$root/../shared/data}"
target=""
pid=""
while (($#)); do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --pid) pid=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for binary in gopt-server gopt-soak gopt; do
  [[ -x "$build/bin/$binary" ]] || {
    echo "soak.sh: no $build/bin/$binary; build it first:" >&2
    echo "  cmake --build $build --target gopt-server gopt-soak gopt" >&2
    exit 2
  }
done

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

server_pid=""
log=""
if [[ -z "$target" ]]; then
  port=$(free_port)
  metrics_port=$(free_port)
  target="127.0.0.1:$port"
  log="$(mktemp /tmp/gopt-soak-server.XXXXXX.log)"
  "$build/bin/gopt-server" --listen="$target" \
    --metrics_listen="127.0.0.1:$metrics_port" "$@" > "$log" 2>&1 &
  server_pid=$!
  pid=$server_pid
  trap '[[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true' EXIT
  echo "soak.sh: gopt-server pid $server_pid on $target (metrics 127.0.0.1:$metrics_port), log $log"
  for ((i = 0; i < 240; ++i)); do
    if "$build/bin/gopt" health --server="$target" > /dev/null 2>&1; then break; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "soak.sh: gopt-server exited at start:" >&2
      tail -20 "$log" >&2
      exit 1
    fi
    sleep 0.5
  done
elif [[ -z "$pid" ]]; then
  echo "soak.sh: --target needs --pid (the server's pid, for RSS and fds)" >&2
  exit 2
fi

status=0
"$build/bin/gopt-soak" --target="$target" --server_pid="$pid" \
  --duration_s="$duration" --max_requests="$requests" \
  --concurrency="$concurrency" --data="$data" || status=$?

if [[ -n "$server_pid" ]]; then
  kill -TERM "$server_pid" 2>/dev/null || true
  server_status=0
  wait "$server_pid" || server_status=$?
  server_pid=""
  echo "gopt-server exit status after SIGTERM: $server_status (log: $log)"
  if ((server_status != 0)); then
    tail -20 "$log"
    status=1
  fi
fi
exit "$status"
