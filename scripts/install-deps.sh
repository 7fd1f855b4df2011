#!/usr/bin/env bash
# Installs every build and test dependency of tessera from Debian bookworm packages.
# Idempotent: installs only what is missing. Needs root (or sudo) when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  clang clang-format clang-tidy libclang-rt-14-dev
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev openssl prometheus-cpp-dev libspdlog-dev python3
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libboost-dev  # Boost.Beast on Asio: the HTTP(S) server for hostile networks (src/adapters/http)
  libsimdjson-dev  # the extender's filter body, parsed on demand (src/core/extender/fast_args.cc)
  libglpk-dev  # the LP upper bound of the trace replay (src/sim/replay/upper_bound.cc)
  chromium  # the /ui page is tested in a real headless browser (tests/app/ui_test.cc)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
