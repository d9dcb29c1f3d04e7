#!/usr/bin/env bash
# Builds the worker executor against a CUDA LibTorch and measures a few plans
# on this host's GPU(s): the executor's tests, gopt calibrate, and
# gopt_executor_eval over plans that place ops on a CPU executor and the GPU.
#
# What it needs (it stops with a message naming what is missing):
#  - an NVIDIA GPU and driver (nvidia-smi works);
#  - a CUDA LibTorch built with the C++11 ABI (gopt's other libraries,
#    Debian's gRPC/protobuf/absl, use it): the official zip that
#    Dockerfile.cuda uses (libtorch-cxx11-abi-shared-with-deps-1.13.1+cu117),
#    unpacked, named by LIBTORCH_DIR=/path/to/libtorch; or a PyTorch
#    installation whose torch._C._GLIBCXX_USE_CXX11_ABI is True (its
#    torch.utils.cmake_prefix_path is used);
#  - the CUDA toolkit LibTorch's CMake config asks for (nvcc on PATH or
#    CUDA_HOME), and gopt's build dependencies (scripts/install-deps.sh with
#    GOPT_DEBIAN_LIBTORCH=0).
# The code compiles its CUDA path only when LibTorch has CUDA
# (GOPT_WORKER_CUDA); Debian's CPU-only LibTorch builds without it.
#
#   LIBTORCH_DIR=/opt/libtorch scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-cuda}
data=${GOPT_SHARED_DATA:-../shared/data}

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
print(torch.utils.cmake_prefix_path)
PY
  ) || exit 2
fi
echo "gpu-check: LibTorch from $prefix"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$build" -j"$(nproc)" \
  --target executor_test calibration_test gopt_executor_eval gopt
grep -q GOPT_WORKER_CUDA "$build/worker/CMakeFiles/gopt_worker_executor.dir/flags.make" ||
  { echo "gpu-check: LibTorch at $prefix has no CUDA libraries" >&2; exit 2; }
"$build/tests/executor_test"
"$build/bin/gopt" calibrate --out="$build/calibrated.json" --executors=1
"$build/bin/gopt_executor_eval" --cpu_executors=1 --cuda_devices=-1 \
  --topology="$build/calibrated.json" \
  --graph="$data/onnx/light_squeezenet.onnx,$data/onnx/light_resnet50.onnx"
