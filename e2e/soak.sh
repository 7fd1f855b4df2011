#!/usr/bin/env bash
# The chaos soak (e2e/soak.py; docs/reliability.md): real etcd, kube-apiserver, kube-scheduler,
# two `tessera serve` replicas with leader election, three `tessera agent` nodes on the simulated
# NVML driven by kubelet-dm, a seeded churn of GPU pods and seeded chaos; invariants checked
# continuously and at the end.
#
#   e2e/soak.sh [--duration SECONDS] [--seed N] [--out DIR] [--keep] ...   (soak.py --help)
#
# Env: TESSERA_BIN (default build/release/src/tessera), TESSERA_K8S_BINS (skip build.sh and use
# this directory), PYTHON (default python3). Needs root (kubelet-dm, mount namespaces).
# Last line of output: `soak: PASS|FAIL: ...` (or `soak: SKIPPED (...)`).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

if [[ -z ${TESSERA_K8S_BINS:-} ]] && ! command -v go >/dev/null 2>&1; then
  echo "soak: SKIPPED (no Go toolchain)"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "soak: SKIPPED (needs root: kubelet-dm serves /var/lib/kubelet/device-plugins)"
  exit 0
fi
for tool in openssl unshare "${PYTHON:-python3}"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "soak: $tool not found" >&2; exit 2; }
done

bins=${TESSERA_K8S_BINS:-}
if [[ -z $bins ]]; then
  bins=$("$here/k8s-bins/build.sh") || { echo "soak: building Kubernetes binaries failed" >&2; exit 2; }
fi

tessera=${TESSERA_BIN:-$repo/build/release/src/tessera}
[[ $tessera == /* ]] || tessera=$repo/$tessera

export PYTHONDONTWRITEBYTECODE=1
exec "${PYTHON:-python3}" "$here/soak.py" --bins "$bins" --tessera "$tessera" --repo "$repo" "$@"
