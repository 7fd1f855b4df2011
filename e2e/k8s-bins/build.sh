#!/usr/bin/env bash
# Builds the real Kubernetes control-plane binaries the end-to-end tests run against
# (etcd, kube-apiserver, kube-scheduler, kubectl, and kubelet-dm: the kubelet's device manager),
# and helm for the chart's tests, from the Go module proxy, into a cache
# outside the repository keyed by version. Prints the bin directory on stdout.
#
# Why a wrapper module: k8s.io/kubernetes requires its staging modules at the fake version
# v0.0.0 and maps them with replace directives that consumers ignore, so we pin each staging
# module to the matching v0.Y.Z ourselves (derived from the kubernetes go.mod, never hard-coded).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
CACHE_ROOT=${TESSERA_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tessera/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}}
BIN="$CACHE_ROOT/bin"
STAMP="$BIN/versions.txt"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
want_stamp() {
  printf 'kubernetes %s\nstaging %s\netcd %s\n%s\n' "$K8S_VERSION" "$STAGING_VERSION" \
    "$ETCD_VERSION" "$(go version)"
}

log() { echo "k8s-bins: $*" >&2; }

if ! command -v go >/dev/null 2>&1; then
  log "no Go toolchain"
  exit 3
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DM_SRC="$HERE/../kubelet-dm/main.go"
DM_STAMP="$BIN/kubelet-dm.txt"
want_dm_stamp() { printf '%s\n%s\n' "$(want_stamp)" "$(sha256sum "$DM_SRC" | cut -d' ' -f1)"; }

# The kubelet's device manager as a stand-in kubelet (e2e/kubelet-dm): its own small module with
# the same staging pins, so a change to it rebuilds only it (the Go build cache has the rest).
build_kubelet_dm() {
  [[ -f "$DM_STAMP" && -x "$BIN/kubelet-dm" && "$(cat "$DM_STAMP")" == "$(want_dm_stamp)" ]] && return 0
  local mod="$CACHE_ROOT/work/kubelet-dm" start
  start=$(date +%s)
  rm -rf "$mod" && mkdir -p "$mod"
  local gomod staging args=()
  gomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  mapfile -t staging < <(grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ v0\.0\.0([[:space:]]|$)' "$gomod" | awk '{print $1}' | sort -u)
  for m in "${staging[@]}"; do args+=("-replace=$m=$m@$STAGING_VERSION"); done
  (
    cd "$mod"
    go mod init local/kubeletdm >/dev/null 2>&1
    go mod edit "${args[@]}"
    cp "$DM_SRC" main.go
    go get "k8s.io/kubernetes@$K8S_VERSION" >&2
    log "building kubelet-dm (the kubelet's device manager)"
    go build -p "${GO_BUILD_JOBS:-2}" -trimpath -ldflags "-s -w" -o "$BIN/kubelet-dm" . >&2
  )
  want_dm_stamp >"$DM_STAMP"
  log "kubelet-dm built in $(($(date +%s) - start)) s"
}

# helm (deploy/helm/tessera is installed with it in e2e): its own module and stamp, since its
# Kubernetes libraries are a newer minor than the binaries above (about 2 minutes cold).
HELM_STAMP="$BIN/helm.txt"
want_helm_stamp() { printf 'helm %s\n%s\n' "$HELM_VERSION" "$(go version)"; }
build_helm() {
  [[ -f "$HELM_STAMP" && -x "$BIN/helm" && "$(cat "$HELM_STAMP")" == "$(want_helm_stamp)" ]] && return 0
  local mod="$CACHE_ROOT/work/helm" start
  start=$(date +%s)
  rm -rf "$mod" && mkdir -p "$mod" "$BIN"
  (
    cd "$mod"
    go mod init local/helmbin >/dev/null 2>&1
    go get -tool "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
    log "building helm $HELM_VERSION"
    go build -p "${GO_BUILD_JOBS:-2}" -trimpath -ldflags "-s -w" -o "$BIN/helm" helm.sh/helm/v3/cmd/helm >&2
  )
  want_helm_stamp >"$HELM_STAMP"
  log "helm built in $(($(date +%s) - start)) s"
}

if [[ -f "$STAMP" ]] && [[ "$(cat "$STAMP")" == "$(want_stamp)" ]] &&
  [[ -x "$BIN/etcd" && -x "$BIN/kube-apiserver" && -x "$BIN/kube-scheduler" && -x "$BIN/kubectl" ]]; then
  build_kubelet_dm
  build_helm
  echo "$BIN"
  exit 0
fi

start=$(date +%s)
mkdir -p "$BIN" "$CACHE_ROOT/work"
WORK="$CACHE_ROOT/work"

# --- Kubernetes -----------------------------------------------------------------------------
K8S_MOD="$WORK/k8s"
rm -rf "$K8S_MOD" && mkdir -p "$K8S_MOD"
log "resolving k8s.io/kubernetes@$K8S_VERSION"
gomod=$(cd "$K8S_MOD" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[[ -f "$gomod" ]] || { log "cannot find go.mod of k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
mapfile -t staging < <(grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ v0\.0\.0([[:space:]]|$)' "$gomod" | awk '{print $1}' | sort -u)
log "pinning ${#staging[@]} staging modules to $STAGING_VERSION"
(
  cd "$K8S_MOD"
  go mod init local/k8sbins >/dev/null 2>&1
  # Copy godebug settings so the binaries behave like upstream builds.
  godebug=$(sed -n '/^godebug/,/^)/p' "$gomod")
  [[ -n "$godebug" ]] && printf '\n%s\n' "$godebug" >>go.mod
  args=()
  for m in "${staging[@]}"; do args+=("-replace=$m=$m@$STAGING_VERSION"); done
  go mod edit "${args[@]}"
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" \
    "k8s.io/kubernetes/cmd/kube-scheduler@$K8S_VERSION" "k8s.io/kubernetes/cmd/kubectl@$K8S_VERSION" >&2
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ldf="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  log "building kube-apiserver, kube-scheduler, kubectl (several minutes cold)"
  go build -p "${GO_BUILD_JOBS:-2}" -trimpath -ldflags "$ldf" -o "$BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl >&2
)

# --- etcd (own wrapper so its gRPC/otel requirements do not merge with Kubernetes's) -------
ETCD_MOD="$WORK/etcd"
rm -rf "$ETCD_MOD" && mkdir -p "$ETCD_MOD"
(
  cd "$ETCD_MOD"
  go mod init local/etcdbin >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
  log "building etcd"
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3 >&2
)

want_stamp >"$STAMP"
log "built in $(($(date +%s) - start)) s into $BIN"
build_kubelet_dm
build_helm
echo "$BIN"
