#!/usr/bin/env bash
# Tier B end-to-end tests: tessera serve against real etcd, kube-apiserver and kube-scheduler
# on 127.0.0.1 (see e2e/real_e2e.py for the scenarios).
#
#   e2e/run-real.sh [--only a,b,...] [--keep] [--work DIR] [--node-lock hami|none]
#
# Env: TESSERA_BIN (default build/release/src/tessera), TESSERA_K8S_BINS (skip build.sh and use
# this directory), PYTHON (default python3), TESSERA_HAMI_DIR (a directory with HAMi's
# scheduler binary and rendered chart, see e2e/README.md; scenario u is skipped without it).
# Last line of output: `e2e-real: N passed, N failed[, N skipped]` (or `e2e-real: SKIPPED (...)`).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

if [[ -z ${TESSERA_K8S_BINS:-} ]] && ! command -v go >/dev/null 2>&1; then
  echo "e2e-real: SKIPPED (no Go toolchain)"
  exit 0
fi
for tool in openssl "${PYTHON:-python3}"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "e2e-real: $tool not found" >&2; exit 2; }
done

bins=${TESSERA_K8S_BINS:-}
if [[ -z $bins ]]; then
  # Builds etcd/kube-apiserver/kube-scheduler/kubectl once per machine (minutes cold, cached).
  bins=$("$here/k8s-bins/build.sh") || { echo "e2e-real: building Kubernetes binaries failed" >&2; exit 2; }
fi

tessera=${TESSERA_BIN:-$repo/build/release/src/tessera}
[[ $tessera == /* ]] || tessera=$repo/$tessera

export PYTHONDONTWRITEBYTECODE=1
exec "${PYTHON:-python3}" "$here/real_e2e.py" --bins "$bins" --tessera "$tessera" --repo "$repo" "$@"
