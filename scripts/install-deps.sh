#!/usr/bin/env bash
# Installs the Debian bookworm packages gopt needs to build, test and serve.
# Idempotent: packages already present are left alone and apt is not run at all.
# Uses sudo when not run as root. Fails if libblas.so.3 does not resolve to
# OpenBLAS, because Debian's LibTorch is ~40x slower on the reference BLAS.
#
# GOPT_DEBIAN_LIBTORCH=0 leaves out Debian's LibTorch (libtorch-dev, 1.13),
# for builds against another LibTorch (Dockerfile.cuda: the official CUDA
# one under /opt/libtorch, found through CMAKE_PREFIX_PATH).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ccache
  lld  # the linker CMakeLists.txt prefers: about 6x faster than GNU ld here
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev libgoogle-glog-dev
  nlohmann-json3-dev libmetis-dev libzip-dev libyaml-cpp-dev
  libopenblas0-pthread
  openssl
  # The plan store (engine/): SQLite files, Redis for replicas (hiredis),
  # SHA-256 keys (libssl-dev); redis-server for its tests.
  libsqlite3-dev libhiredis-dev libssl-dev redis-server
  python3  # scripts/check-structure.sh, run by ctest
  jq  # scripts/bench-identity.sh
)
# GOPT_TRAINING_TOOLS=1 (the Makefile's pretrained-* targets): gnuplot for
# the training curves those targets plot (tools/plot_*.sh).
if [[ "${GOPT_TRAINING_TOOLS:-0}" == "1" ]]; then
  PACKAGES+=(gnuplot-nox)
fi
if [[ "${GOPT_DEBIAN_LIBTORCH:-1}" != "0" ]]; then
  # libgloo-dev: the headers of c10d's Gloo process group (gopt-train's
  # data-parallel training; the library itself is in libtorch_cpu).
  PACKAGES+=(libtorch-dev libgloo-dev)
fi
# Only needed for -DGOPT_FUZZ=ON (libFuzzer ships with clang's runtime).
if [[ "${GOPT_FUZZ:-0}" == "1" ]]; then
  PACKAGES+=(clang libclang-rt-14-dev)
fi

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
  SUDO="sudo"
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -gt 0 ]]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all ${#PACKAGES[@]} packages present"
fi

blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
if [[ "$blas" != *openblas* ]]; then
  echo "install-deps: libblas.so.3 resolves to '${blas:-nothing}', not OpenBLAS;" \
       "LibTorch matrix multiply would be ~40x slower. Install libopenblas0-pthread" \
       "or run: update-alternatives --config libblas.so.3-x86_64-linux-gnu" >&2
  exit 1
fi
echo "install-deps: libblas.so.3 -> $blas"

# ONNX Runtime for the exporter's consumer check (tests/onnx_runtime): the
# onnxruntime-node package from npm, into an ignored folder. Its install
# script only downloads GPU binaries from a host outside the registry, so it
# is skipped; the CPU binaries ship inside the package. GOPT_NPM=0 (the
# container images, which build no tests) leaves it out.
if [[ "${GOPT_NPM:-1}" == "0" ]]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: installing nodejs npm"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends nodejs npm
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPM_DIR="${GOPT_NPM_DIR:-$ROOT/build/npm}"
ORT_VERSION=1.30.0
if [[ ! -f "$NPM_DIR/node_modules/onnxruntime-node/package.json" ]] ||
   ! grep -q "\"version\": \"$ORT_VERSION\"" \
       "$NPM_DIR/node_modules/onnxruntime-node/package.json"; then
  mkdir -p "$NPM_DIR"
  npm install --ignore-scripts --no-audit --no-fund --prefix "$NPM_DIR" \
    "onnxruntime-node@$ORT_VERSION"
fi
echo "install-deps: onnxruntime-node $ORT_VERSION in $NPM_DIR"
