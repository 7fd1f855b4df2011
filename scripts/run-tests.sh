#!/usr/bin/env bash
# Builds and runs every test: format and layering checks, a release build with warnings as
# errors, an ASan+UBSan build, a TSan build, and the libFuzzer targets for a short time each.
# Usage: scripts/run-tests.sh            (FUZZ_SECONDS=N to change the fuzzing time per target)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
JOBS=$(nproc)
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/tessera-ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# Paths below the checkout hash relative, so a fresh clone in another folder (as CI makes) hits
# the cache of earlier runs.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}

scripts/install-deps.sh || { echo "install-deps failed"; exit 1; }

passed=0   # test cases (ctest) and fuzz targets that passed
failed=0
failures=()
CASES_PASSED=0  # set by a stage that runs test cases
CASES_FAILED=0
stage() {  # stage NAME COMMAND...: runs one stage, counts it, keeps going on failure
  local name=$1
  shift
  local start=$SECONDS
  echo
  echo "=== $name"
  CASES_PASSED=0
  CASES_FAILED=0
  if "$@"; then
    echo "=== $name: ok ($((SECONDS - start)) s)"
    [ "$CASES_PASSED" -eq 0 ] && CASES_PASSED=1  # a check without test cases counts once
  else
    failures+=("$name")
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
    [ "$CASES_FAILED" -eq 0 ] && CASES_FAILED=1
  fi
  passed=$((passed + CASES_PASSED))
  failed=$((failed + CASES_FAILED))
}

check_format() {
  local files
  files=$(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'fuzz/*.cc')
  clang-format --dry-run -Werror $files
}

check_layers() {
  # The core is pure: no adapter, simulator or app headers, no I/O libraries.
  if grep -rnE '#include "(adapters|sim|app)/|#include <(yaml-cpp|curl|httplib|fstream|iostream|thread|mutex)' src/core; then
    echo "src/core includes something outside the pure core (see above)"
    return 1
  fi
  if grep -rnE '#include "app/' src/sim src/adapters src/scheduler src/scheduler_runtime; then return 1; fi
  # The service is the state machine behind the endpoints: core only, I/O through interfaces.
  if grep -rnE '#include "(adapters|scheduler_runtime|sim)/|#include <(curl|httplib|yaml-cpp)' src/scheduler; then
    echo "src/scheduler reaches past its ClusterWriter interface (see above)"
    return 1
  fi
  # Adapters know the core, never the service or the commands built on them.
  if grep -rnE '#include "(service|serve|sim|agent|agent_runtime)/' src/adapters; then return 1; fi
  # The agent's logic: core and its own interfaces (GpuDriver, NodeApi), files only for the
  # ledger; Kubernetes, gRPC and NVML are agent_runtime's and the adapters'.
  if grep -rnE '#include "(adapters/(kube|nvml|deviceplugin)|agent_runtime|serve|service|sim)/|#include <(curl|httplib|grpc|dlfcn)' src/agent; then
    echo "src/agent reaches past its GpuDriver and NodeApi interfaces (see above)"
    return 1
  fi
  return 0
}

e2e_real() {  # real etcd, kube-apiserver and kube-scheduler around `tessera serve` (e2e/README.md)
  local log=build/e2e-real.log
  TESSERA_BIN="$ROOT/build/release/src/tessera" e2e/run-real.sh 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local summary
  summary=$(grep -E '^e2e-real: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [ -n "$summary" ]; then
    CASES_PASSED=$(echo "$summary" | sed -E 's/^e2e-real: ([0-9]+) passed.*/\1/')
    CASES_FAILED=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  fi
  return "$rc"
}

build_and_test() {  # build_and_test DIR CTEST_ARGS -- CMAKE_ARGS...
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DTESSERA_WERROR=ON "$@" > "$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$JOBS" || return 1
  local rc=0
  (cd "$dir" && ctest --output-on-failure -j "$JOBS" --timeout 600) 2>&1 | tee "$dir.ctest.log"
  rc=${PIPESTATUS[0]}
  local summary
  summary=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$dir.ctest.log" | tail -1)
  if [ -n "$summary" ]; then
    local total fails
    fails=$(echo "$summary" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
    total=$(echo "$summary" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/')
    CASES_PASSED=$((total - fails))
    CASES_FAILED=$fails
  fi
  return "$rc"
}

lint() {  # clang-tidy over src/ with .clang-tidy's checks, on the release build's commands
  local log=build/clang-tidy.log
  # GCC-only warning flags in the compile commands are not clang-tidy's business.
  run-clang-tidy-14 -p build/release -quiet -j "$JOBS" -extra-arg=-Wno-unknown-warning-option \
    "^$ROOT/src/" > "$log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] || grep -qE '(warning|error): ' "$log"; then
    grep -E -A3 '(warning|error): ' "$log" | head -100
    return 1
  fi
}

mkdir -p build
stage "format (clang-format)" check_format
stage "layering" check_layers
stage "release build + tests" build_and_test build/release -DCMAKE_BUILD_TYPE=Release
stage "end-to-end (real kube-apiserver, kube-scheduler, etcd)" e2e_real
stage "lint (clang-tidy)" lint
stage "ASan+UBSan build + tests" build_and_test build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_SANITIZE=address,undefined -DTESSERA_BUILD_BENCH=OFF
# Debian's cpp-httplib is not TSan-instrumented; see tests/tsan.supp.
export TSAN_OPTIONS="suppressions=$ROOT/tests/tsan.supp ${TSAN_OPTIONS:-}"
stage "TSan build + tests" build_and_test build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_SANITIZE=thread -DTESSERA_BUILD_BENCH=OFF
if [ -f fuzz/CMakeLists.txt ]; then
  fuzz() {
    CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTESSERA_BUILD_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF \
      -DTESSERA_SANITIZE=address,undefined > build/fuzz.configure.log 2>&1 ||
      { cat build/fuzz.configure.log; return 1; }
    # Only the fuzz targets and what they link: the program, the agent and gRPC are not needed.
    local targets
    targets=$(cd fuzz && ls fuzz_*.cc | sed 's/\.cc$//')
    # shellcheck disable=SC2086
    cmake --build build/fuzz -j "$JOBS" --target $targets || return 1
    local n
    n=$(find build/fuzz -maxdepth 2 -type f -name 'fuzz_*' -executable | wc -l)
    if scripts/run-fuzzers.sh build/fuzz "$FUZZ_SECONDS"; then
      CASES_PASSED=$n
      return 0
    fi
    return 1
  }
  stage "fuzzers (${FUZZ_SECONDS}s each)" fuzz
fi

echo
if [ ${#failures[@]} -gt 0 ]; then echo "failed stages: ${failures[*]}"; fi
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
