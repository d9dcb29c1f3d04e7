#!/usr/bin/env bash
# Checks that the executor-only configuration (GOPT_EXECUTOR_ONLY, what
# scripts/gpu-check.sh builds on a GPU host) configures without gRPC, glog,
# Google Benchmark or prometheus-cpp, and still defines the targets
# gpu-check.sh builds. Configures only (seconds); ctest runs it as
# check_executor_only.
#
#   scripts/check-executor-only.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$(mktemp -d)}
trap 'rm -rf "$dir"' EXIT
cmake -S "$root" -B "$dir" -DGOPT_EXECUTOR_ONLY=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_gRPC=ON -DCMAKE_DISABLE_FIND_PACKAGE_glog=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=ON > "$dir.log" 2>&1 ||
  { cat "$dir.log" >&2; rm -f "$dir.log"; echo "check-executor-only: configure failed" >&2; exit 1; }
rm -f "$dir.log"
targets=$(cmake --build "$dir" --target help)
for t in executor_test calibration_test gopt_executor_eval gopt_worker_executor; do
  grep -q "\b$t\b" <<< "$targets" ||
    { echo "check-executor-only: no target $t" >&2; exit 1; }
done
for t in gopt-server gopt-worker gopt_go; do
  if grep -q "\.\.\. $t\$" <<< "$targets"; then
    echo "check-executor-only: $t should not be configured" >&2; exit 1
  fi
done
echo "check-executor-only: ok"
