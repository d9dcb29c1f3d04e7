#!/usr/bin/env bash
# The hostile-client cases of the reliability review (docs/reliability.md)
# against a real gopt-server on a loopback port: gopt-hostile's table (one
# row per request case: code, message, time, server RSS / peak, health),
# then the cases that need a server process of their own (a second server
# on a bound port, a TLS key that does not match its certificate). Prints
# one line per check; exits non-zero when any check fails. Run after `make
# build`; takes a few minutes and several GB. Not run in CI.
#
#   scripts/hostile-cases.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
BIN="$BUILD/bin"
DATA="${GOPT_SHARED_DATA:-../shared/data}"
WORK="$(mktemp -d)"
PORT=50061
failures=0
trap 'kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT

check() {  # NAME COMMAND...: PASS when COMMAND succeeds
  local name="$1"; shift
  if "$@" >"$WORK/check.log" 2>&1; then
    echo "PASS $name"
  else
    echo "FAIL $name"; sed 's/^/  /' "$WORK/check.log" | tail -5
    failures=$((failures + 1))
  fi
}

[[ -d "$DATA" ]] || { echo "shared data not found at $DATA" >&2; exit 2; }
"$BIN/gopt" generate gnmt --preset=gnmt8-80k --out="$WORK/g85k.pb" >/dev/null
"$BIN/gopt" generate gnmt --layers=8 --seq=384 --batch=64 --hidden=1024 \
  --out="$WORK/g250k.pb" >/dev/null

# The 8 GiB pod of deploy/: a 6 GiB budget for requests, and an 8 GiB
# address-space limit (AS_LIMIT=0 runs without it), under which one
# std::bad_alloc would abort the server.
AS_LIMIT="${AS_LIMIT:-8589934592}"
LIMIT=()
[[ "$AS_LIMIT" != 0 ]] && LIMIT=(prlimit --as="$AS_LIMIT")
# MAX_MESSAGE_BYTES (default: the server's 32 MiB) sets --max_message_bytes;
# with 67108864 the 40 and 60 MiB cases reach the importers' wire scan.
MAX_MESSAGE_BYTES="${MAX_MESSAGE_BYTES:-33554432}"
"${LIMIT[@]}" "$BIN/gopt-server" --listen=127.0.0.1:$PORT --metrics_listen= \
  --max_message_bytes="$MAX_MESSAGE_BYTES" \
  --memory_budget_bytes=6442450944 >"$WORK/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 60); do
  "$BIN/gopt" health --server=127.0.0.1:$PORT >/dev/null 2>&1 && break
  sleep 1
done
"$BIN/gopt-hostile" --server=127.0.0.1:$PORT --pid=$SERVER --data_dir="$DATA" \
  --max_message_bytes="$MAX_MESSAGE_BYTES" \
  --graph_85k="$WORK/g85k.pb" --graph_250k="$WORK/g250k.pb"
[[ $? -eq 0 ]] || failures=$((failures + 1))

second_server_refused() {
  ! "$BIN/gopt-server" --listen=127.0.0.1:$PORT --metrics_listen= \
      >"$WORK/second.log" 2>&1 &&
    grep -q "already in use" "$WORK/second.log" &&
    cat "$WORK/second.log" | grep "already in use"
}
check "a second server on a bound port refuses to start" second_server_refused
kill -TERM "$SERVER"; wait "$SERVER"
check "the first server drained and exited 0 after all that" test $? -eq 0

tls_mismatch_named() {
  openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
    -keyout "$WORK/a.key" -out "$WORK/a.crt" 2>/dev/null &&
  openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
    -keyout "$WORK/b.key" -out "$WORK/b.crt" 2>/dev/null &&
  ! "$BIN/gopt-server" --listen=127.0.0.1:0 --metrics_listen= \
      --tls_cert="$WORK/a.crt" --tls_key="$WORK/b.key" >"$WORK/tls.log" 2>&1 &&
  grep "does not belong to --tls_cert" "$WORK/tls.log"
}
check "a TLS key that does not match its certificate is named" tls_mismatch_named

echo "$failures check(s) failed"
exit $((failures > 0))
