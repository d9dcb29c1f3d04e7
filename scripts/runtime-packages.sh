#!/usr/bin/env bash
# Prints the Debian packages that own the shared libraries the given binaries
# load (ldd: the whole closure), one per line, sorted. Used by the Dockerfile
# to install only those packages in the runtime image.
#
#   scripts/runtime-packages.sh build/bin/gopt-server build/bin/gopt
#
# On merged-/usr systems (Debian 12) ldd reports /lib/x86_64-linux-gnu/libz.so.1
# and readlink -f /usr/lib/x86_64-linux-gnu/libz.so.1.2.13, while dpkg knows
# the file under the path its package ships it (/lib/...); so each library
# is looked up as reported, as resolved, and each of those with and without
# the /usr prefix. Libraries no package owns (an unpacked LibTorch under
# /opt) are named on stderr as "runtime-packages: unowned: PATH"; the exit
# status stays 0, since the caller copies those itself.
set -euo pipefail
if [[ $# -eq 0 ]]; then
  echo "usage: $0 BINARY..." >&2
  exit 64
fi

libraries="$(ldd "$@" | awk '$3 ~ /^\// {print $3}' | sort -u)"
if [[ -z "$libraries" ]]; then
  echo "runtime-packages: ldd found no shared library in $*" >&2
  exit 1
fi

# Each library's candidate paths, in order of preference.
declare -A candidates
all_paths=()
while read -r lib; do
  resolved="$(readlink -f "$lib")"
  list=()
  for path in "$lib" "${lib#/usr}" "/usr${lib}" \
              "$resolved" "${resolved#/usr}" "/usr${resolved}"; do
    list+=("$path")
  done
  candidates["$lib"]="${list[*]}"
  all_paths+=("${list[@]}")
done <<< "$libraries"

# One dpkg -S for all paths (one call per path takes minutes). Its lines are
# "pkg:arch: path" or "pkg1, pkg2: path"; paths nobody owns only complain on
# stderr. The first package of a line owns the path.
declare -A owner
while IFS= read -r line; do
  [[ "$line" == "diversion by"* ]] && continue
  path="${line##*: }"
  pkg="${line%%: *}"
  pkg="${pkg%%,*}"
  owner["$path"]="${pkg%%:*}"
done < <(printf '%s\n' "${all_paths[@]}" | sort -u \
           | xargs -r dpkg -S 2>/dev/null || true)

packages=()
while read -r lib; do
  pkg=""
  for path in ${candidates["$lib"]}; do
    pkg="${owner["$path"]:-}"
    [[ -n "$pkg" ]] && break
  done
  if [[ -n "$pkg" ]]; then
    packages+=("$pkg")
  else
    echo "runtime-packages: unowned: $lib" >&2
  fi
done <<< "$libraries"

printf '%s\n' "${packages[@]}" | sort -u
