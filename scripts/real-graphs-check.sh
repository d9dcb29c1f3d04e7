#!/usr/bin/env bash
# Imports every graph file in DIR with `gopt inspect --json` and prints, per
# file: the format, node count, coverage shares (known shapes, cost rule,
# loops with a known trip count, ops costed by bytes only), the op types that
# lack rules, the total FLOPs and, when a sidecar FILE.handcount holds one
# number, that hand count and gopt's FLOPs over it.
#
# A sidecar FILE.flags (one line) adds inspect flags for that file, e.g.
# `--default_dim=50` for a TF graph whose batch is -1 and whose hand count
# was made at batch 50. Files named *.handcount, *.flags, *.md and *.txt
# are not graphs and are skipped.
#
# Exits 1 when a file fails to import (its error is printed), 0 otherwise;
# coverage below 99% or a FLOPs ratio outside [0.9, 1.1] is flagged in the
# last column but does not fail the run (the numbers are the report).
#
#   scripts/real-graphs-check.sh /work/realgraphs
#
# The graphs found for issue 39 and how to fetch them: docs/real-graphs.md.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
dir=${1:?usage: scripts/real-graphs-check.sh DIR}
[[ -x "$build/bin/gopt" ]] || { echo "real-graphs-check: missing $build/bin/gopt: build first" >&2; exit 2; }
[[ -d "$dir" ]] || { echo "real-graphs-check: no directory $dir" >&2; exit 2; }

failed=0
printf '%-40s %-9s %6s %7s %7s %7s %7s %16s %16s %7s %s\n' \
  file format nodes shapes costs trips bytes flops hand ratio note
for file in "$dir"/*; do
  [[ -f "$file" ]] || continue
  case "$file" in *.handcount | *.flags | *.md | *.txt) continue ;; esac
  flags=()
  [[ -f "$file.flags" ]] && read -r -a flags < "$file.flags"
  if ! json=$("$build/bin/gopt" inspect "$file" --json "${flags[@]}" 2> /tmp/real-graphs-check.err); then
    printf '%-40s FAILED: %s\n' "$(basename "$file")" "$(tail -1 /tmp/real-graphs-check.err)"
    failed=1
    continue
  fi
  hand=""
  [[ -f "$file.handcount" ]] && hand=$(tr -d ' \n' < "$file.handcount")
  HAND="$hand" NAME="$(basename "$file")" python3 -c '
import json, os, sys
d = json.loads(sys.stdin.read())
c = d["coverage"]
hand = os.environ["HAND"]
flops = d["total_flops"]
ratio = flops / float(hand) if hand else None
notes = []
if c["known_shapes"]["share"] < 0.99 or c["cost_rules"]["share"] < 0.99:
    notes.append("coverage<99%")
if ratio is not None and not 0.9 <= ratio <= 1.1:
    notes.append("flops off by >10%")
if c["ops_lacking_rules"]:
    notes.append("lacking: " + ",".join(sorted(c["ops_lacking_rules"])))
print("%-40s %-9s %6d %7.4f %7.4f %7.4f %7.4f %16.0f %16s %7s %s" % (
    os.environ["NAME"][:40], d["format"], d["nodes"], c["known_shapes"]["share"],
    c["cost_rules"]["share"], c["known_trip_counts"]["share"],
    c["bytes_only"]["share"], flops, hand or "-",
    "%.4f" % ratio if ratio is not None else "-", " ".join(notes)))
' <<< "$json"
done
exit $failed
