#!/usr/bin/env bash
# Builds tessera (release) and runs the built-in demo. Usage: scripts/run-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The flags of scripts/run-tests.sh's release tree, so that the test run reuses these objects.
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=ON \
  -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF > /dev/null
cmake --build build/release --target tessera
exec build/release/src/tessera demo
