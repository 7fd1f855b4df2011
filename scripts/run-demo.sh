#!/usr/bin/env bash
# Builds tessera (release) and runs the built-in demo. Usage: scripts/run-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS=OFF \
  -DTESSERA_BUILD_BENCH=OFF > /dev/null
cmake --build build/release --target tessera
exec build/release/src/tessera demo
