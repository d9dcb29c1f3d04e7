#!/usr/bin/env bash
# Writes what gopt makes of every real graph and every generator preset into
# OUTDIR, one file per input, so that two builds can be compared:
#
#   scripts/import-snapshot.sh /tmp/before      # on the old build
#   scripts/import-snapshot.sh /tmp/after       # on the new build
#   diff -r /tmp/before /tmp/after && echo identical
#
# For each file under ../shared/data (or $GOPT_SHARED_DATA): the output of
# `gopt inspect --json` (node and edge counts, FLOPs, bytes, op kinds,
# warnings) and its stderr with the exit code; the ONNX files with symbolic
# dims are imported a second time with their dims given. For each generator
# preset: the sha256 of the graph `gopt generate --preset` writes.
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/import-snapshot.sh OUTDIR}
data=${GOPT_SHARED_DATA:-../shared/data}
gopt=${GOPT_BIN:-build/bin/gopt}
mkdir -p "$out"
inspect() {
  local key=$1
  shift
  "$gopt" inspect --json "$@" >"$out/$key.json" 2>"$out/$key.err"
  echo "rc=$?" >>"$out/$key.err"
}
for f in $(find "$data" -type f ! -name '*.md' ! -name '*.txt' | sort); do
  inspect "$(echo "${f#"$data"/}" | tr / _)" "$f"
done
inspect onnx_ch_ppocr_dims "$data/onnx/ch_ppocr_mobile_v2.0_cls_infer.onnx" \
  --dim=p2o.DynamicDimension.0=1 --dim=p2o.DynamicDimension.1=48 \
  --dim=p2o.DynamicDimension.2=192
inspect onnx_silero_dims "$data/onnx/silero_vad_legacy.onnx" \
  --dim=batch=2 --dim=sequence=1536
tmp=$(mktemp)
for preset in $("$gopt" generate list 2>&1 | sed -n 's/^  \([a-z_0-9]*-[a-z0-9]*\):.*/\1/p'); do
  if "$gopt" generate --preset="$preset" --out="$tmp" >/dev/null 2>&1; then
    sha256sum <"$tmp" | cut -d' ' -f1 >"$out/generate_$preset.sha256"
  else
    echo failed >"$out/generate_$preset.sha256"
  fi
done
rm -f "$tmp"
