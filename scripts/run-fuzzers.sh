#!/usr/bin/env bash
# Runs every fuzz_* binary in BUILD_DIR/fuzz for SECONDS each, over a copy of its seed corpus
# (fuzz/corpus/<target>) in a temporary directory, so that the checked-in corpus stays small.
# JOBS fuzzers run at once (default: one per core; each is single-threaded, so each still gets
# SECONDS of a core). Exits non-zero if any fuzzer crashes, leaks, times out or reports a
# sanitizer error; the reproducer (crash-*, leak-*, timeout-*, oom-*) is kept in the directory
# the failure names.
#
# Usage: scripts/run-fuzzers.sh BUILD_DIR SECONDS [JOBS]
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS [JOBS]" >&2
  exit 2
fi
build_dir=$1
seconds=$2
jobs=${3:-$(nproc)}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

shopt -s nullglob
fuzzers=()
for f in "$build_dir"/fuzz/fuzz_* "$build_dir"/fuzz_*; do
  [[ -f $f && -x $f ]] && fuzzers+=("$f")
done
if [[ ${#fuzzers[@]} -eq 0 ]]; then
  echo "no fuzz_* binaries in $build_dir (configure with -DTESSERA_BUILD_FUZZ=ON)" >&2
  exit 2
fi

work=$(mktemp -d -t tessera-fuzz.XXXXXX)
run_one() {  # run_one BINARY: fuzzes it, leaves its exit status in $work/NAME/status
  local bin=$1 name corpus artifacts status=0
  name=$(basename "$bin")
  corpus=$work/$name/corpus
  artifacts=$work/$name/artifacts
  mkdir -p "$corpus" "$artifacts"
  if [[ -d $repo/fuzz/corpus/$name ]]; then
    cp -R "$repo/fuzz/corpus/$name/." "$corpus/"
  fi
  "$bin" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=25 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$work/$name/log" 2>&1 ||
    status=$?
  echo "$status" >"$work/$name/status"
}

running=0
for bin in "${fuzzers[@]}"; do
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
  echo "== $(basename "$bin"): ${seconds}s"
  run_one "$bin" &
  running=$((running + 1))
done
wait || true

failed=()
for bin in "${fuzzers[@]}"; do
  name=$(basename "$bin")
  echo "== $name"
  grep -E '^(stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb)' \
    "$work/$name/log" || true
  status=$(cat "$work/$name/status" 2>/dev/null || echo missing)
  if [[ $status != 0 ]]; then
    echo "!! $name failed (exit $status); log $work/$name/log, reproducers in $work/$name/artifacts" >&2
    grep -E 'ERROR|runtime error|SUMMARY|round trip' "$work/$name/log" | head -n 5 >&2 || true
    failed+=("$name")
  fi
done

if [[ ${#failed[@]} -ne 0 ]]; then
  echo "FAILED: ${failed[*]} (work directory kept: $work)" >&2
  exit 1
fi
echo "all ${#fuzzers[@]} fuzzers passed"
rm -rf "$work"
