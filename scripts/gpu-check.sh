#!/usr/bin/env bash
# Builds the worker executor against a CUDA LibTorch and measures plans on
# this host's GPU: the executor's and calibration's tests (with the CUDA
# device in them), then gopt_executor_eval calibrating this host (CPU
# executor and GPU) and measuring its candidate plans over both.
#
# What it needs (it stops with a message naming what is missing):
#  - an NVIDIA GPU and driver (nvidia-smi works);
#  - a CUDA LibTorch built with the C++11 ABI (gopt's other libraries,
#    Debian's protobuf/absl, use it): a PyTorch installation whose
#    torch._C._GLIBCXX_USE_CXX11_ABI is True (PyTorch 2.7 and later; its
#    torch.utils.cmake_prefix_path is used), or an unpacked official cxx11-abi
#    LibTorch zip named by LIBTORCH_DIR=/path/to/libtorch;
#  - the CUDA toolkit LibTorch's CMake config asks for (nvcc on PATH or
#    CUDA_HOME);
#  - the executor's build dependencies only (the build is configured with
#    GOPT_EXECUTOR_ONLY: no gRPC, glog or Google Benchmark): Protobuf with
#    protoc, absl, nlohmann_json and GoogleTest. On Debian,
#    scripts/install-deps.sh installs them. On another distribution, run
#    `scripts/gpu-deps.sh DIR` on a Debian bookworm machine (it downloads
#    Debian's .deb files of exactly these) and name DIR here by
#    GOPT_DEPS_DEBS=DIR: they are unpacked into the build folder, not
#    installed;
#  - the real graphs: ../shared/data, or GOPT_SHARED_DATA=DIR.
#
#   scripts/gpu-check.sh
#   LIBTORCH_DIR=/opt/libtorch GOPT_DEPS_DEBS=/tmp/debs scripts/gpu-check.sh
#
# BUILD_DIR (default build-cuda) is the build folder; JOBS (default: every
# core) the build's parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-cuda}
export GOPT_SHARED_DATA=${GOPT_SHARED_DATA:-$PWD/../shared/data}
[[ -d "$GOPT_SHARED_DATA/onnx" ]] ||
  { echo "gpu-check: no real graphs at $GOPT_SHARED_DATA (set GOPT_SHARED_DATA)" >&2; exit 2; }

command -v nvidia-smi > /dev/null && nvidia-smi -L ||
  { echo "gpu-check: no NVIDIA GPU/driver (nvidia-smi failed)" >&2; exit 2; }
if [[ -n "${LIBTORCH_DIR:-}" ]]; then
  prefix="$LIBTORCH_DIR"
else
  prefix=$(python3 - <<'PY'
import sys
try:
    import torch
except ImportError:
    sys.exit("gpu-check: set LIBTORCH_DIR, or install a CUDA PyTorch")
if not torch.cuda.is_available():
    sys.exit("gpu-check: this PyTorch has no CUDA (or sees no GPU)")
if not torch._C._GLIBCXX_USE_CXX11_ABI:
    sys.exit("gpu-check: this PyTorch uses the pre-C++11 ABI; gopt links "
             "Debian's C++11-ABI libraries: use LIBTORCH_DIR with the "
             "cxx11-abi LibTorch zip")
print(torch.__version__, file=sys.stderr)
print(torch.utils.cmake_prefix_path)
PY
  ) || exit 2
fi
echo "gpu-check: LibTorch from $prefix"

if [[ -n "${GOPT_DEPS_DEBS:-}" ]]; then
  command -v dpkg-deb > /dev/null ||
    { echo "gpu-check: GOPT_DEPS_DEBS needs dpkg-deb" >&2; exit 2; }
  deps="$PWD/$build/deps"
  rm -rf "$deps" && mkdir -p "$deps"
  shopt -s nullglob
  debs=("$GOPT_DEPS_DEBS"/*.deb)
  ((${#debs[@]})) ||
    { echo "gpu-check: no .deb files in $GOPT_DEPS_DEBS (scripts/gpu-deps.sh DIR makes them)" >&2; exit 2; }
  for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$deps"; done
  libdir=$(dirname "$(find "$deps/usr/lib" -name 'libprotobuf.so*' | head -1)")
  prefix="$prefix;$deps/usr"
  export PATH="$deps/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu-check: build dependencies unpacked from $GOPT_DEPS_DEBS into $deps"
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGOPT_EXECUTOR_ONLY=ON -DCMAKE_PREFIX_PATH="$prefix"
grep -q GOPT_WORKER_CUDA "$build/worker/CMakeFiles/gopt_worker_executor.dir/flags.make" ||
  { echo "gpu-check: LibTorch at $prefix has no CUDA libraries" >&2; exit 2; }
cmake --build "$build" -j"${JOBS:-$(nproc)}" \
  --target executor_test calibration_test gopt_executor_eval

echo "gpu-check: executor tests (CUDA devices included where a test asks for every device)"
"$build/tests/executor_test"
"$build/tests/calibration_test"
echo "gpu-check: calibrating one CPU executor and the GPU, then measuring plans over both"
"$build/bin/gopt_executor_eval" --cpu_executors=1 --cuda_devices=1 \
  --calibrate_out="$build/calibrated.json" \
  --graph="$GOPT_SHARED_DATA/onnx/light_squeezenet.onnx,$GOPT_SHARED_DATA/onnx/light_resnet50.onnx,$GOPT_SHARED_DATA/tf_graphdef/kws_DS_CNN_S.pb"
