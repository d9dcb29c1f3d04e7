#!/usr/bin/env bash
# Prints the include graph between the top-level folders of the tracked C++
# sources: one line per (from, to) pair of different folders with the number
# of #include "..." edges from files under `from` to headers under `to`,
# sorted by folder. Generated and system headers (<...>) are not counted;
# an include path's folder is its first path component.
#
#   scripts/include-graph.sh [REPO_ROOT]
#
# Then prints the number of tracked files (any kind) per top-level folder.
set -euo pipefail

root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
if ! files=$(git ls-files -- '*.cc' '*.h' 2>/dev/null); then
  echo "include-graph: $root is not a git checkout" >&2
  exit 2
fi

printf '%s\n' "$files" | python3 -c '
import collections
import re
import sys

paths = sorted(p for p in sys.stdin.read().split() if "/" in p)
tops = {p.split("/", 1)[0] for p in paths}
edges = collections.Counter()
include = re.compile(r"^\s*#\s*include\s+\"([^\"]+)\"", re.M)
for path in paths:
    source = path.split("/", 1)[0]
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for header in include.findall(text):
        target = header.split("/", 1)[0]
        if "/" in header and target in tops and target != source:
            edges[(source, target)] += 1
print("include edges between top-level folders (from -> to: count)")
for (source, target), count in sorted(edges.items()):
    print(f"  {source} -> {target}: {count}")
'
echo "tracked files per top-level folder"
git ls-files | awk -F/ 'NF > 1 {print $1}' | sort | uniq -c |
  awk '{printf "  %s: %d\n", $2, $1}'
