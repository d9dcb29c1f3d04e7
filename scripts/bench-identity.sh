#!/usr/bin/env bash
# Are `gopt bench` outputs identical across builds, apart from timings?
# (Issue #38: a restructuring must leave them byte-identical.) Runs the same
# bench cases with every given gopt, strips the measured times from the JSON
# (the jq filter below; the fields it deleted are printed), and compares each
# binary's stripped output with the previous binary's byte for byte. Where
# they differ it prints the first differing fields, one line each:
#   <topology> <case> row <graph> <method> <field>=<value>
#
#   scripts/bench-identity.sh [--out=DIR] [--policy_dir=DIR]
#                             [--go_policy=NAME] [--no-go] GOPT...
#
# GOPT: a gopt binary, a build directory (DIR/bin/gopt) or a checkout
# (DIR/build/bin/gopt), in history order (A B C compares A-B and B-C; each
# runs once). Give the same binary twice to check that the cases are
# deterministic on this host.
# Cases, each on v100x4-nvlink and h100x8-nvlink, flags identical for every
# binary (OMP_NUM_THREADS=1, nice -n 19):
#   baselines  docs/baselines-benchmark.md's command: every generator preset
#              (the first binary's `generate list`) + every HLO and ONNX file
#              of $GOPT_SHARED_DATA (../shared/data), the standard baselines
#              and best-baseline, --dim as there.
#   formats    the same on the TF GraphDef, TF.js and TpuGraphs files.
#   go         the GO policy's methods (--policy_dir, default this checkout's
#              policy/pretrained; --go_policy, default go-multitask-v4) on
#              every real graph and the *-small presets (up to 5,500 nodes;
#              on the larger ones the policy takes minutes per method, and
#              on gnmt8-80k its zero-shot decode alone 40 s of go-finetune's
#              60 s wall-clock budget). go-finetune* run 4 PPO steps with 32
#              search simulations each, about 1-8 s of CPU a graph, inside
#              that budget (20 s a part for -1by1 and -separate) on an idle
#              host; at nice 19 beside busy processes a run can be stopped
#              at another step. Rows whose fine_tune_steps differ are left
#              out of the comparison and counted; rerun those runs (delete
#              their .rc) when the host is quieter.
# Output in --out (default a new temporary folder): <label>/<topology>-
# <case>.{cmd,json,err,rc,stripped,flat} (label: the checkout's short commit,
# -dirty when modified; .2 when repeated) and times.tsv (wall and CPU seconds
# per run). Runs already in --out with the same command line and newer than
# their binary are kept, so a later call adds binaries without rerunning (one
# GOPT only runs). Exit status 0 when every binary matched the previous one.
# About 5 minutes per binary on an idle two-core host (per topology: baselines
# 25-35 s, formats 2 s, go 90-120 s of CPU); longer beside other work.
set -euo pipefail
ROOT="$(realpath "$(dirname "$0")/..")"
OUT="" POLICY_DIR="$ROOT/policy/pretrained" GO_POLICY=go-multitask-v4 GO=1
BINS=()
for arg in "$@"; do
  case "$arg" in
    --out=*) OUT="${arg#--out=}" ;;
    --policy_dir=*) POLICY_DIR="$(realpath "${arg#--policy_dir=}")" ;;
    --go_policy=*) GO_POLICY="${arg#--go_policy=}" ;;
    --no-go) GO=0 ;;
    -*) echo "unknown flag $arg (see the header of $0)" >&2; exit 2 ;;
    *)
      for bin in "$arg" "$arg/bin/gopt" "$arg/build/bin/gopt"; do
        [[ -f "$bin" && -x "$bin" ]] && break
      done
      [[ -f "$bin" && -x "$bin" ]] || { echo "no gopt binary at $arg" >&2; exit 2; }
      BINS+=("$(realpath "$bin")") ;;
  esac
done
((${#BINS[@]} >= 1)) || { echo "usage: $0 [flags] GOPT..." >&2; exit 2; }
[[ -z "$OUT" ]] || OUT=$(realpath -m "$OUT")
cd "$ROOT"
DATA="${GOPT_SHARED_DATA:-../shared/data}"
[[ -d "$DATA/hlo" ]] || { echo "no shared data at $DATA (set GOPT_SHARED_DATA)" >&2; exit 2; }
DATA=$(realpath "$DATA")
OUT="${OUT:-$(mktemp -d /tmp/bench-identity.XXXXXX)}"
mkdir -p "$OUT"
export OMP_NUM_THREADS=1

# Measured times: keys named *seconds*, elapsed, wall or cpu (method_seconds
# today). Simulated times (step_time_s, lower_bound_s), memory and plans stay.
TIMING='def timing: test("(^|_)(seconds|elapsed|wall|cpu)(_|$)");'
STRIP="$TIMING"' walk(if type == "object"
  then with_entries(select(.key | timing | not)) else . end)'
DELETED="$TIMING"' [paths as $p | select(($p[-1] | type) == "string" and
  ($p[-1] | timing)) | $p | map(if type == "number" then "[]" else . end)
  | join(".")] | group_by(.) | map("\(.[0]) (\(length))") | .[]'
# One line per field, named by graph and method.
FLAT='(to_entries[] | select(.value | type != "array")
   | "\(.key)=\(.value | tojson)"),
  (.graphs[]? | . as $g | to_entries[] | select(.key != "graph")
   | "graph \($g.graph) \(.key)=\(.value | tojson)"),
  (.rows[]? | . as $r | to_entries[] | select(.key != "graph" and .key != "method")
   | "row \($r.graph) \($r.method) \(.key)=\(.value | tojson)"),
  (.summary[]? | . as $s | to_entries[] | select(.key != "method")
   | "summary \($s.method) \(.key)=\(.value | tojson)")'

presets=$("${BINS[0]}" generate list | sed -n 's/^  \([a-z0-9_-]*\):.*/gen:\1/p')
join() { paste -sd, -; }
base_graphs="$(echo "$presets" | join),$(ls "$DATA"/hlo/*.hlo "$DATA"/onnx/*.onnx | join)"
format_graphs=$(ls "$DATA"/tf_graphdef/*.pb "$DATA"/tfjs/*.json "$DATA"/tpugraphs/*.pb | join)
go_graphs=$(echo "$base_graphs,$format_graphs" | tr , '\n' | awk '!/^gen:/ || /-small$/' | join)
DIM=--dim=sequence=512,p2o.DynamicDimension.1=48,p2o.DynamicDimension.2=192
GO_METHODS=go-zeroshot,go-zeroshot-1by1,go-zeroshot-separate,go-finetune
GO_METHODS+=,go-finetune-cold,go-finetune-1by1,go-finetune-separate
CASES=(baselines formats)
((GO)) && CASES+=(go)
case_flags() {
  case "$1" in
    baselines) echo "--graph=$base_graphs" ;;
    formats) echo "--graph=$format_graphs" ;;
    go) echo "--graph=$go_graphs --methods=$GO_METHODS --policy_dir=$POLICY_DIR"
        echo "--go_policy=$GO_POLICY --fine_tune_steps=4 --search_simulations=32" ;;
  esac
}

label_of() {  # the checkout's commit (+dirty) when the binary is in one
  local dir sha
  dir=$(dirname "$1")
  [[ $(basename "$dir") == bin ]] && dir=$(dirname "$dir")
  sha=$(git -C "$dir" rev-parse --short HEAD 2>/dev/null) || { basename "$dir"; return; }
  git -C "$dir" diff --quiet HEAD 2>/dev/null || sha+="-dirty"
  echo "$sha"
}

[[ -f "$OUT/times.tsv" ]] || printf 'run\ttopology\tcase\twall_s\tcpu_s\trc\n' >"$OUT/times.tsv"
run_all() {  # $1 run folder, $2 binary
  local topology c base cmd t0 t1
  mkdir -p "$1"
  echo "$2 -> $1 (binary $(date -r "$2" '+%F %T'))"
  for topology in v100x4-nvlink h100x8-nvlink; do
    for c in "${CASES[@]}"; do
      base="$1/$topology-$c"
      cmd="nice -n 19 $2 bench --topology=$topology --json $DIM $(case_flags $c)"
      # Kept from an earlier call with --out=$OUT: same command, newer than the binary.
      if [[ -f "$base.cmd" && "$(cat "$base.cmd")" == "$cmd" && "$base.rc" -nt "$2" ]]; then
        continue
      fi
      t0=$(date +%s.%N)
      set +e
      /usr/bin/time -f '%U %S' -o "$base.cpu" $cmd >"$base.json" 2>"$base.err"
      echo $? >"$base.rc"
      set -e
      t1=$(date +%s.%N)
      echo "$cmd" >"$base.cmd"
      printf '%s\t%s\t%s\t%.1f\t%.1f\t%s\n' "$(basename "$1")" $topology $c \
        "$(awk "BEGIN {print $t1 - $t0}")" "$(awk '{print $1 + $2}' "$base.cpu")" \
        "$(cat "$base.rc")" >>"$OUT/times.tsv"
      if jq -e . "$base.json" >/dev/null 2>&1; then
        jq "$STRIP" "$base.json" >"$base.stripped"
        jq -r "$FLAT" "$base.stripped" | sed "s/^/$topology $c /" >"$base.flat"
      else
        { echo "rc=$(cat "$base.rc")"; tail -3 "$base.err"; } >"$base.stripped"
        cp "$base.stripped" "$base.flat"
      fi
    done
  done
}

DIRS=()  # one run folder per argument: the label, .2, .3 ... when repeated
for bin in "${BINS[@]}"; do
  dir="$OUT/$(label_of "$bin")" n=1
  while [[ " ${DIRS[*]} " == *" $dir "* ]]; do n=$((n + 1)) dir="$OUT/$(label_of "$bin").$n"; done
  DIRS+=("$dir")
  run_all "$dir" "$bin"
done
echo
echo "Deleted by the timing filter (path and count, first binary's runs):"
for f in "${DIRS[0]}"/*.json; do
  jq -r "$DELETED" "$f" 2>/dev/null | sed "s|^|  $(basename "$f" .json): |"
done
# go-finetune* rows whose fine_tune_steps differ: the 60 s wall-clock budget
# (20 s per part in -1by1 and -separate) stopped one run's fine-tuning at
# another step; that depends on the host's load (nice 19 beside busy
# processes runs at a small share of a core), not on the build. Writes both
# flat files without those rows and their methods' summary lines to $3.a and
# $3.b; prints how many rows it left out.
drop_budget_cuts() {
  awk -v out="$3" '
    FNR == 1 { file++ }
    { lines[file] = lines[file] $0 "\n" }
    $3 == "row" && $6 ~ /^fine_tune_steps=/ { steps[file, $4 " " $5] = $6; keys[$4 " " $5] }
    END {
      for (k in keys) {
        if (steps[1, k] == steps[2, k]) continue
        cut[k]; n++; split(k, gm, " "); cut_method[gm[2]]
      }
      for (f = 1; f <= 2; f++) {
        m = split(lines[f], l, "\n")
        for (i = 1; i < m; i++) {
          split(l[i], w, " ")
          if (w[3] == "row" && (w[4] " " w[5]) in cut) continue
          if (w[3] == "summary" && w[4] in cut_method) continue
          print l[i] > (out (f == 1 ? ".a" : ".b"))
        }
      }
      print n + 0
    }' "$1" "$2"
}
same=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for ((i = 1; i < ${#DIRS[@]}; i++)); do
  ref=${DIRS[i - 1]} dir=${DIRS[i]}
  echo
  echo "$(basename "$ref") vs $(basename "$dir"):"
  for c in "${CASES[@]}"; do
    for topology in v100x4-nvlink h100x8-nvlink; do
      name=$topology-$c f=$ref/$topology-$c.stripped
      counts=$(jq -r '"\(.graphs | length) graphs x \(.rows | map(.method) | unique
        | length) methods = \(.rows | length) rows"' "$f" 2>/dev/null || echo "no JSON")
      if cmp -s "$f" "$dir/$name.stripped"; then
        echo "  $name: identical ($counts)"
        continue
      fi
      cuts=$(drop_budget_cuts "$ref/$name.flat" "$dir/$name.flat" "$TMP/$name")
      touch "$TMP/$name.a" "$TMP/$name.b"
      cut_note=""
      ((cuts == 0)) || cut_note=", $cuts go-finetune* rows left out: fine_tune_steps differ (budget)"
      if ((cuts > 0)) && cmp -s "$TMP/$name.a" "$TMP/$name.b"; then
        echo "  $name: identical ($counts$cut_note)"
      else
        same=0
        fields=$(diff "$TMP/$name.a" "$TMP/$name.b" | grep '^>' | awk '{
          for (i = 2; i <= NF; i++) if ($i ~ /=/) { sub(/=.*/, "", $i); print $i; break } }' |
          sort | uniq -c | awk '{printf " %s (%d)", $2, $1}' || true)
        echo "  $name: DIFFERENT ($counts$cut_note); fields that differ (lines):$fields;" \
          "the first (< before, > after):"
        lines=$(diff "$TMP/$name.a" "$TMP/$name.b" | grep '^[<>]' | head -12 || true)
        [[ -n "$lines" ]] || lines=$(diff "$f" "$dir/$name.stripped" | head -12 || true)
        echo "$lines" | sed 's/^/    /'
      fi
      cmp -s "$ref/$name.err" "$dir/$name.err" || echo "    (stderr differs: diff $ref/$name.err $dir/$name.err)"
    done
  done
done
echo
echo "Wall and CPU seconds per run: $OUT/times.tsv"
column -t "$OUT/times.tsv"
((same))
