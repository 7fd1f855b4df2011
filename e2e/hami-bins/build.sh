#!/usr/bin/env bash
# Builds HAMi's scheduler extender (cmd/scheduler) from a HAMi source checkout and renders HAMi's
# own Helm chart next to it, so that e2e/bench_throughput.py can run HAMi's scheduler with the
# configuration HAMi ships (kube-scheduler config, device config, extender flags), on the same
# control plane and nodes as tessera. Prints the output directory on stdout:
#   scheduler       the extender binary
#   rendered.yaml   `helm template` of the checkout's charts/hami for Kubernetes $K8S_VERSION
#   commit.txt      the checkout's commit and the Go version that built it (the cache key)
#
# Why a checkout and not the Go module proxy: the proxy answers 403 for
# github.com/Project-HAMi/HAMi on these machines, so the source has to come from a clone (for
# example the tool library's `fetch` of github:Project-HAMi/HAMi); HAMi's own dependencies still
# come from the proxy. Not used by .ci/run.
#
# Usage: e2e/hami-bins/build.sh HAMI_SRC   (or TESSERA_HAMI_SRC=...); HELM: the helm binary
# (default: the one e2e/k8s-bins/build.sh caches).
set -euo pipefail

log() { echo "hami-bins: $*" >&2; }

SRC=${1:-${TESSERA_HAMI_SRC:-}}
if [[ -z "$SRC" || ! -f "$SRC/go.mod" || ! -d "$SRC/cmd/scheduler" ]]; then
  log "usage: build.sh HAMI_SRC (a checkout of github.com/Project-HAMi/HAMi)"
  exit 2
fi
SRC=$(cd "$SRC" && pwd)
if ! grep -q '^module github.com/Project-HAMi/HAMi$' "$SRC/go.mod"; then
  log "$SRC/go.mod is not HAMi's module"
  exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_VERSION=${K8S_VERSION:-v1.36.3}
if [[ -z "${HELM:-}" ]]; then
  HELM="$(bash "$HERE/../k8s-bins/build.sh" | tail -n1)/helm"
fi

COMMIT=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo "uncommitted")
if [[ "$COMMIT" != "uncommitted" && -n "$(git -C "$SRC" status --porcelain 2>/dev/null)" ]]; then
  COMMIT="$COMMIT-dirty"
fi
OUT=${TESSERA_HAMI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera/hami-${COMMIT:0:12}}
want_stamp() { printf '%s\n%s\n%s\n' "$COMMIT" "$(go version)" "$K8S_VERSION"; }

if [[ "$COMMIT" != *dirty && "$COMMIT" != uncommitted && -x "$OUT/scheduler" &&
      -f "$OUT/rendered.yaml" && -f "$OUT/commit.txt" && "$(cat "$OUT/commit.txt")" == "$(want_stamp)" ]]; then
  echo "$OUT"
  exit 0
fi
mkdir -p "$OUT"
rm -f "$OUT/commit.txt"
start=$(date +%s)
log "building HAMi's scheduler at $COMMIT"
(
  cd "$SRC"
  # cgo stays on: HAMi links go-nvml, whose types are generated for cgo.
  GOTOOLCHAIN=local GOFLAGS=-mod=mod \
    go build -trimpath -ldflags='-s -w' -o "$OUT/scheduler" ./cmd/scheduler >"$OUT/build.log" 2>&1 ||
    { tail -n 40 "$OUT/build.log" >&2; exit 1; }
)
"$HELM" template hami "$SRC/charts/hami" --kube-version "${K8S_VERSION#v}" >"$OUT/rendered.yaml"
want_stamp >"$OUT/commit.txt"
log "built in $(($(date +%s) - start)) s: $OUT"
echo "$OUT"
