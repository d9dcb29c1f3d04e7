#!/usr/bin/env bash
# Downloads Debian bookworm's .deb files of what the executor-only build
# (GOPT_EXECUTOR_ONLY, scripts/gpu-check.sh) needs beside LibTorch and the
# CUDA toolkit: Protobuf (protoc and the library), absl, nlohmann_json and
# GoogleTest. For GPU hosts that are not Debian and cannot reach its
# mirrors: run this on a Debian bookworm machine, copy DIR over, and run
# `GOPT_DEPS_DEBS=DIR scripts/gpu-check.sh` there (the files are unpacked
# into the build folder, never installed).
#
#   scripts/gpu-deps.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/gpu-deps.sh DIR (the folder to download into)}
mkdir -p "$dir"
cd "$dir"
# apt-get download writes as the _apt user where it can; a folder it
# cannot write to only makes it warn.
apt-get download protobuf-compiler libprotoc32 libprotobuf32 libprotobuf-dev \
  libabsl-dev libabsl20220623 libgtest-dev libgmock-dev googletest \
  nlohmann-json3-dev
ls -1 "$PWD"/*.deb
