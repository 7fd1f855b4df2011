#!/usr/bin/env bash
# Builds and runs every test: format and layering checks, a release build with warnings as
# errors, the adversarial suite against `tessera serve` (tests/adversarial), the end-to-end tests,
# a 3-minute chaos soak of the whole system (e2e/soak.py), clang-tidy, one clang ASan+UBSan tree
# for the tests and the libFuzzer targets (run for a short time each), and a TSan tree for the
# programs that start threads. scripts/ci-timing.sh times it from a fresh clone
# (docs/development.md).
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
# Precompiled headers (the sanitizer trees' tests) are cacheable only with these.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# The sanitizer trees compile with -g1, and ccache hashes the working directory of every -g
# compile unless told not to: each new clone would miss them all. Reports still name the file
# and line (relative to the folder of the build that filled the cache).
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

scripts/install-deps.sh || { echo "install-deps failed"; exit 1; }

passed=0   # test cases (ctest) and fuzz targets that passed
failed=0
failures=()
failure_logs=()  # the log of each failed stage that keeps one, shown again at the end
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
  STAGE_LOG=""  # a stage with its own log names it here
  if "$@"; then
    [ "$CASES_PASSED" -eq 0 ] && CASES_PASSED=1  # a check without test cases counts once
    echo "stage-count: $CASES_PASSED $CASES_FAILED"
    echo "=== $name: ok ($((SECONDS - start)) s)"
  else
    failures+=("$name")
    [ -n "$STAGE_LOG" ] && failure_logs+=("$STAGE_LOG")
    [ "$CASES_FAILED" -eq 0 ] && CASES_FAILED=1
    echo "stage-count: $CASES_PASSED $CASES_FAILED"
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
  fi
  passed=$((passed + CASES_PASSED))
  failed=$((failed + CASES_FAILED))
}

check_format() {
  local files
  files=$(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'fuzz/*.cc')
  clang-format --dry-run -Werror $files
}

# Each layer (a folder under src/ and its CMake target, docs/architecture.md's table) and the
# layers whose headers its files may include. A layer inside another's folder (sim/replay in
# sim) is a layer of its own; a folder that belongs to no layer fails the check, so that a new
# one is added here and to the table. `app` (the tessera program) may include every layer.
LAYER_INCLUDES=(
  "core: core"
  "adapters/threads: adapters/threads core"
  "adapters/logging: adapters/logging"
  "adapters/files: adapters/files core"
  "adapters/yaml: adapters/yaml core"
  "adapters/kube: adapters/kube adapters/yaml core"
  "adapters/http: adapters/http core"
  "adapters/nvml: adapters/nvml core"
  "adapters/deviceplugin: adapters/deviceplugin core"
  "sim: sim adapters/yaml core"
  "sim/replay: sim/replay core"
  "sim/mig_replay: sim/mig_replay sim/replay sim core"
  "scheduler: scheduler core"
  "scheduler_runtime: scheduler_runtime scheduler sim adapters/kube adapters/http core"
  "agent: agent adapters/files core"
  "agent_runtime: agent_runtime agent adapters/kube adapters/deviceplugin adapters/http adapters/files core"
  "nvml_sim: nvml_sim adapters/nvml adapters/files core"
  "app: *"
)
layer_of() {  # layer_of PATH (below src/): the layer whose folder holds it, the deepest; "" if none
  local layer best=""
  for layer in "${LAYERS[@]}"; do
    if [[ $1 == "$layer" || $1 == "$layer"/* ]] && [ ${#layer} -gt ${#best} ]; then best=$layer; fi
  done
  echo "$best"
}
check_layers() {
  local entry layer file header dir failed=0
  local -A allowed=()
  LAYERS=()
  for entry in "${LAYER_INCLUDES[@]}"; do
    layer=${entry%%:*}
    LAYERS+=("$layer")
    allowed[$layer]=" ${entry#*: } "
  done
  while read -r dir; do
    dir=${dir#src/}
    if [ -z "$(layer_of "$dir")" ]; then
      echo "src/$dir belongs to no layer: add it to LAYER_INCLUDES and docs/architecture.md"
      failed=1
    fi
  done < <(find src -mindepth 2 -type f -printf '%h\n' | sort -u)
  for layer in "${LAYERS[@]}"; do
    if ! grep -q "^| \`src/$layer\` |" docs/architecture.md; then
      echo "docs/architecture.md's layer table has no row for src/$layer"
      failed=1
    fi
  done
  # Every project header (a quoted include with a folder) must be in a layer the includer's
  # layer may include.
  while IFS=: read -r file header; do
    layer=$(layer_of "${file#src/}")
    [ -n "$layer" ] || continue  # its folder is reported above
    [ "${allowed[$layer]}" = " * " ] && continue
    header=${header#*\"}
    header=${header%\"}
    if [[ ${allowed[$layer]} != *" $(layer_of "$header") "* ]]; then
      echo "$file: includes $header, which $layer may not (LAYER_INCLUDES)"
      failed=1
    fi
  done < <(grep -rHoE '#include "[a-z_]+/[^"]*"' src --include='*.h' --include='*.cc')
  # The core is pure: no I/O libraries, no threads.
  if grep -rnE '#include <(yaml-cpp|curl|httplib|boost|grpc|spdlog|dlfcn|fstream|iostream|thread|mutex)' src/core; then
    echo "src/core includes something outside the pure core (see above)"
    failed=1
  fi
  # The scheduler is the state machine behind the endpoints: I/O through its interfaces.
  if grep -rnE '#include <(curl|httplib|yaml-cpp|boost)' src/scheduler; then
    echo "src/scheduler reaches past its ClusterWriter interface (see above)"
    failed=1
  fi
  # The agent's logic: core and its own interfaces (GpuDriver, NodeApi), files only for the
  # ledger; Kubernetes, gRPC and NVML are agent_runtime's and the adapters'.
  if grep -rnE '#include <(curl|httplib|grpc|dlfcn)' src/agent; then
    echo "src/agent reaches past its GpuDriver and NodeApi interfaces (see above)"
    failed=1
  fi
  return "$failed"
}

# The Kubernetes binaries and helm for the end-to-end stage (minutes cold, then cached) build in
# the background from the start, at low priority: they fill the cores whenever the C++ stages
# leave one idle (linking, tests that wait, downloads). The end-to-end stage waits for them.
K8S_BINS_PID=""
start_k8s_bins() {
  command -v go >/dev/null 2>&1 || return 0
  nice -n 10 e2e/k8s-bins/build.sh > build/k8s-bins.out 2> build/k8s-bins.log &
  K8S_BINS_PID=$!
}

e2e_real() {  # real etcd, kube-apiserver and kube-scheduler around `tessera serve` (e2e/README.md)
  local log=build/e2e-real.log
  STAGE_LOG=$log
  if [ -n "$K8S_BINS_PID" ]; then
    local waited=$SECONDS
    if wait "$K8S_BINS_PID" && [ -s build/k8s-bins.out ]; then
      export TESSERA_K8S_BINS
      TESSERA_K8S_BINS=$(tail -1 build/k8s-bins.out)
    else  # run-real.sh builds them itself, in the foreground, and says what failed
      tail -20 build/k8s-bins.log
    fi
    echo "k8s-bins: waited $((SECONDS - waited)) s for the background build ($(grep -E 'built in' build/k8s-bins.log | tr '\n' ' '))"
  fi
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

soak() {  # the chaos soak (e2e/soak.py, docs/reliability.md), 3 minutes; counts its invariants
  # e2e_real exported TESSERA_K8S_BINS (the same Kubernetes binaries); the seed is random and
  # printed (rerun: e2e/soak.sh --seed N --duration 180). Output in build/soak/.
  local log=build/soak.log
  STAGE_LOG=$log
  rm -rf build/soak
  TESSERA_BIN="$ROOT/build/release/src/tessera" e2e/soak.sh --duration 180 --out build/soak \
    --seed "${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  if grep -qE '^soak: (PASS|FAIL): ' "$log"; then  # one case per invariant
    CASES_FAILED=$(sed -n '/^invariants (violations)/,/^$/p' "$log" | awk '/^  / && NF == 2 && $2 > 0' | wc -l)
    CASES_PASSED=$(( $(sed -n '/^invariants (violations)/,/^$/p' "$log" | awk '/^  / && NF == 2' | wc -l) - CASES_FAILED ))
  fi
  return "$rc"
}

adversarial() {  # tests/adversarial/run.py --quick on the release tree's program; prints its table
  local log=build/adversarial.log
  STAGE_LOG=$log
  python3 tests/adversarial/run.py --tessera build/release/src/tessera --quick 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local summary
  summary=$(grep -E '^adversarial: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [ -n "$summary" ]; then
    CASES_PASSED=$(echo "$summary" | sed -E 's/^adversarial: ([0-9]+) passed.*/\1/')
    CASES_FAILED=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  fi
  return "$rc"
}

configure() {  # configure DIR CMAKE_ARGS...: a Ninja tree with warnings as errors
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DTESSERA_WERROR=ON "$@" > "$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
}

run_ctest() {  # run_ctest DIR CTEST_ARGS...: runs the tests, sets the stage's case counts
  local dir=$1
  shift
  local rc=0
  STAGE_LOG=$dir.ctest.log
  (cd "$dir" && ctest --output-on-failure -j "$JOBS" --timeout 600 "$@") 2>&1 | tee "$dir.ctest.log"
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

build_and_test() {  # build_and_test DIR CMAKE_ARGS...: configure, build everything, run every test
  local dir=$1
  shift
  configure "$dir" "$@" || return 1
  cmake --build "$dir" -j "$JOBS" || return 1
  run_ctest "$dir"
}

# clang-tidy over src/ with .clang-tidy's checks, each translation unit once, clean results
# cached. It needs only the release tree's compile commands, so it starts in the background
# at low priority as soon as that tree is built and fills the cores while the end-to-end stage
# waits for its cluster; the lint stage then waits for it and reports.
LINT_PID=""
start_lint() {
  [ -f build/release/compile_commands.json ] || return 0
  nice -n 10 python3 scripts/clang-tidy-cached.py -p build/release --files "^$ROOT/src/" \
    -j "$JOBS" > build/clang-tidy.log 2>&1 &
  LINT_PID=$!
}
lint() {
  local rc=0
  if [ -n "$LINT_PID" ]; then
    wait "$LINT_PID" || rc=$?
  else  # the release tree was not configured: run it here, and fail on what it says
    python3 scripts/clang-tidy-cached.py -p build/release --files "^$ROOT/src/" -j "$JOBS" \
      > build/clang-tidy.log 2>&1 || rc=$?
  fi
  tail -1 build/clang-tidy.log
  if [ $rc -ne 0 ]; then
    head -150 build/clang-tidy.log
    return 1
  fi
}

# The sanitizer trees: the code under test at -O1 with line tables (readable reports, about a
# third of -O2 -g's compile time), the test programs themselves at -O0; asserts as in release.
# Both precompile the test programs' common headers (tests/CMakeLists.txt).
SANITIZER_TREE=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  -DTESSERA_TEST_COMPILE_OPTIONS=-O0 -DTESSERA_TEST_PCH=ON -DTESSERA_BUILD_TESTS=ON
  -DTESSERA_BUILD_BENCH=OFF)

asan() {  # one clang tree for ASan+UBSan: every test, and the libFuzzer targets for the next stage
  CC=clang CXX=clang++ build_and_test build/asan "${SANITIZER_TREE[@]}" \
    -DTESSERA_SANITIZE=address,undefined -DTESSERA_BUILD_FUZZ=ON
}

fuzz() {  # the libFuzzer targets of the ASan+UBSan tree, FUZZ_SECONDS each, one per core at once
  local n
  n=$(find build/asan/fuzz -maxdepth 1 -type f -name 'fuzz_*' -executable | wc -l)
  [ "$n" -gt 0 ] || { echo "no fuzz targets in build/asan/fuzz"; return 1; }
  scripts/run-fuzzers.sh build/asan/fuzz "$FUZZ_SECONDS" "$JOBS" || return 1
  CASES_PASSED=$n
}

# The test programs that start threads run under TSan (with the `cli.*` tests: the program
# itself). The core starts none (the layering check keeps <thread> and <mutex> out of it), so
# its tests are not here; check_tsan_list fails the stage if a program that starts threads is.
TSAN_TEST_BINARIES=(tessera_sim_tests tessera_kube_tests tessera_scheduler_tests
  tessera_scheduler_runtime_tests tessera_agent_tests tessera_deviceplugin_tests tessera_app_tests)
check_tsan_list() {  # every test program of the release tree that starts a thread is listed
  local bin name found=0 missing=()
  for bin in build/release/tests/tessera_*_tests; do
    [ -x "$bin" ] || continue
    found=$((found + 1))
    name=$(basename "$bin")
    if nm -u -C "$bin" | grep -qE 'std::thread::_M_start_thread|pthread_create|grpc::ServerBuilder::BuildAndStart'; then
      [[ " ${TSAN_TEST_BINARIES[*]} " == *" $name "* ]] || missing+=("$name")
    fi
  done
  [ "$found" -gt 0 ] || { echo "no test programs in build/release/tests to check"; return 1; }
  if [ ${#missing[@]} -gt 0 ]; then
    echo "these test programs start threads but are not in TSAN_TEST_BINARIES: ${missing[*]}"
    return 1
  fi
}

tsan() {
  check_tsan_list || return 1
  configure build/tsan "${SANITIZER_TREE[@]}" -DTESSERA_SANITIZE=thread || return 1
  cmake --build build/tsan -j "$JOBS" --target "${TSAN_TEST_BINARIES[@]}" tessera tessera_nvml_sim ||
    return 1
  local labels
  labels=$(IFS='|'; echo "${TSAN_TEST_BINARIES[*]}|cli")
  run_ctest build/tsan -L "^($labels)\$"
}

mkdir -p build
start_k8s_bins
stage "format (clang-format)" check_format
stage "layering" check_layers
# The product at -O3 as shipped; the test programs' own code at -O1 (a quarter less compile time).
# The demo's tree (scripts/run-demo.sh) is this one without tests and benchmarks.
stage "release build + tests" build_and_test build/release -DCMAKE_BUILD_TYPE=Release \
  -DTESSERA_TEST_COMPILE_OPTIONS=-O1 -DTESSERA_BUILD_TESTS=ON -DTESSERA_BUILD_BENCH=ON
# Before clang-tidy starts in the background: the suite asserts latencies on 2 cores.
stage "adversarial (tessera serve under attack, --quick)" adversarial
start_lint
stage "end-to-end (real kube-apiserver, kube-scheduler, etcd)" e2e_real
stage "chaos soak (3 min: churn, kills, stalls, NVML faults, reboot; invariants)" soak
stage "lint (clang-tidy; ran beside the end-to-end stage)" lint
stage "ASan+UBSan build + tests (clang)" asan
stage "fuzzers (${FUZZ_SECONDS}s each, ASan+UBSan)" fuzz
# Debian's cpp-httplib is not TSan-instrumented; see tests/tsan.supp.
export TSAN_OPTIONS="suppressions=$ROOT/tests/tsan.supp ${TSAN_OPTIONS:-}"
stage "TSan build + tests (programs that start threads)" tsan

# A failed stage's own output has scrolled far up by now; its log's end is repeated here, where
# a reader of only the last lines of the run still sees why it failed.
for log in "${failure_logs[@]}"; do
  echo
  echo "--- the end of $log (its stage failed)"
  tail -n 30 "$log" | cut -c1-300
done
echo
if [ ${#failures[@]} -gt 0 ]; then echo "failed stages: ${failures[*]}"; fi
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
