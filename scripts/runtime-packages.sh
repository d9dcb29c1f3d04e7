#!/usr/bin/env bash
# Prints the Debian packages that own the shared libraries the given binaries
# load (one per line, sorted). Libraries no package owns (e.g. an unpacked
# CUDA LibTorch under /opt) are skipped. Used by the Dockerfile to install
# only runtime libraries in the final image.
#
#   scripts/runtime-packages.sh build/bin/gopt-server build/bin/gopt
set -euo pipefail
if [[ $# -eq 0 ]]; then
  echo "usage: $0 BINARY..." >&2
  exit 64
fi
ldd "$@" | awk '$3 ~ /^\// {print $3}' | sort -u | xargs -r -n1 readlink -f \
  | while read -r lib; do dpkg -S "$lib" 2>/dev/null || true; done \
  | cut -d: -f1 | sort -u
