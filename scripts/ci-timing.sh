#!/usr/bin/env bash
# Times the CI run as CI makes it: a fresh clone of HEAD in a new folder (with ../shared beside
# it), `CI=true bash .ci/run`, every cache pointed at a folder of this script's: ccache, the
# clang-tidy results, the Go build and module caches and the Kubernetes binaries. Prints the
# stage table (seconds per stage, test cases per stage) and the total.
#
#   scripts/ci-timing.sh --cold [--cache DIR]   empty caches (DIR is emptied first)
#   scripts/ci-timing.sh --warm --cache DIR     the caches a previous run left in DIR
#   options: --demo (run scripts/run-demo.sh first, as a user would), --keep (keep the clone),
#            --ref REF (what to clone; default HEAD), --log FILE (the full output)
#
# The table goes to stdout and to DIR/ci-timing.md; docs/development.md keeps the latest.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

mode="" cache="" demo=0 keep=0 ref=HEAD log=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --cold) mode=cold ;;
    --warm) mode=warm ;;
    --cache) cache=$2; shift ;;
    --demo) demo=1 ;;
    --keep) keep=1 ;;
    --ref) ref=$2; shift ;;
    --log) log=$2; shift ;;
    *) echo "usage: $0 --cold|--warm [--cache DIR] [--demo] [--keep] [--ref REF] [--log FILE]" >&2
       exit 2 ;;
  esac
  shift
done
[[ -n $mode ]] || { echo "$0: say --cold or --warm" >&2; exit 2; }
if [[ $mode == warm && ( -z $cache || ! -d $cache ) ]]; then
  echo "$0: --warm needs --cache DIR from an earlier run" >&2
  exit 2
fi
cache=${cache:-$(mktemp -d -t tessera-ci-cache.XXXXXX)}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
if [[ $mode == cold ]]; then
  # Go marks its module cache read-only; make it writable before removing it.
  chmod -R u+w "$cache" 2>/dev/null || true
  find "$cache" -mindepth 1 -delete
fi

# The clone sits beside a link to shared/, as CI's clone does.
top=$(mktemp -d -t tessera-ci-run.XXXXXX)
git clone --quiet --no-local "$repo" "$top/main"
git -C "$top/main" checkout --quiet "$(git -C "$repo" rev-parse "$ref")"
[[ -d $repo/../shared ]] && ln -s "$(cd "$repo/../shared" && pwd)" "$top/shared"
log=${log:-$cache/ci-run.log}

export CCACHE_DIR=$cache/ccache
export XDG_CACHE_HOME=$cache/xdg        # the Kubernetes binaries and clang-tidy's results
export GOCACHE=$cache/go-build
export GOMODCACHE=$cache/go-mod
export GOPATH=$cache/go
unset TESSERA_K8S_CACHE TESSERA_K8S_BINS TESSERA_TIDY_CACHE
export CI=true

start=$SECONDS
rc=0
{
  if [[ $demo -eq 1 ]]; then
    demo_start=$SECONDS
    (cd "$top/main" && scripts/run-demo.sh >/dev/null) || rc=$?
    echo "=== demo (scripts/run-demo.sh): $([[ $rc -eq 0 ]] && echo ok || echo FAILED) ($((SECONDS - demo_start)) s)"
  fi
  (cd "$top/main" && bash .ci/run </dev/null) || rc=$?
} >"$log" 2>&1
total=$((SECONDS - start))

commit=$(git -C "$top/main" rev-parse --short HEAD)
table=$cache/ci-timing.md
{
  echo "$mode run of $commit on $(date -u +%Y-%m-%d), $(nproc) cores, exit $rc:"
  echo
  echo "| stage | seconds | passed | failed |"
  echo "|---|---:|---:|---:|"
  # `=== NAME: ok (N s)` lines, and the counts each stage adds to the closing total.
  awk '
    /^=== .*: (ok|FAILED) \([0-9]+ s\)$/ {
      line = $0; sub(/^=== /, "", line)
      secs = line; sub(/.*\(/, "", secs); sub(/ s\)$/, "", secs)
      name = line; sub(/: (ok|FAILED) \([0-9]+ s\)$/, "", name)
      status = (line ~ /: FAILED \(/) ? " (FAILED)" : ""
      counts = ""
      if (pending != "") { counts = pending; pending = "" }
      printf "| %s%s | %d | %s |\n", name, status, secs, counts
    }
    /^stage-count: / { pending = $2 " | " $3 }
  ' "$log"
  echo "| **total** | **$total** | | |"
  echo
  grep -E '^total: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1 || echo "(no closing total line)"
} >"$table"
cat "$table"
echo "full output: $log; caches: $cache"
if [[ $keep -eq 0 ]]; then rm -rf "$top"; else echo "clone kept: $top/main"; fi
exit "$rc"
