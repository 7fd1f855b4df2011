#!/usr/bin/env bash
# Makes tessera's serving certificate with openssl and installs it:
#   1. a private CA and a certificate for the Service DNS names (tessera.<ns>.svc, ...),
#   2. Secret <secret> in <ns> with tls.crt, tls.key and ca.crt (mounted at /tls),
#   3. the CA as caBundle of MutatingWebhookConfiguration <webhook> (if it exists).
# Re-running replaces all three (pods pick up the new files; restart them if they do not).
#
# Usage: deploy/gen-webhook-cert.sh [--namespace NS] [--service NAME] [--secret NAME]
#          [--webhook NAME] [--days N] [--out-dir DIR] [--no-apply]
#   --out-dir DIR   keep ca.crt, tls.crt, tls.key in DIR (default: a temp dir, removed)
#   --no-apply      only write the files (needs --out-dir); no kubectl calls
# Env: KUBECTL (default kubectl), KUBECONFIG as usual.
set -euo pipefail

ns=tessera-system
service=tessera
secret=tessera-tls
webhook=tessera-webhook
days=825
out_dir=""
apply=1
kubectl=${KUBECTL:-kubectl}

die() { echo "gen-webhook-cert: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --namespace) ns=$2; shift 2 ;;
    --service) service=$2; shift 2 ;;
    --secret) secret=$2; shift 2 ;;
    --webhook) webhook=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --out-dir) out_dir=$2; shift 2 ;;
    --no-apply) apply=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
command -v openssl >/dev/null || die "openssl not found"
[[ $apply == 1 || -n $out_dir ]] || die "--no-apply needs --out-dir"

if [[ -n $out_dir ]]; then
  mkdir -p "$out_dir"
  dir=$out_dir
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
umask 077

curve=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
openssl req -x509 "${curve[@]}" -nodes -days "$days" -subj "/CN=tessera-webhook-ca" \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
cat >"$dir/ext.cnf" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:${service},DNS:${service}.${ns},DNS:${service}.${ns}.svc,DNS:${service}.${ns}.svc.cluster.local
EXT
openssl req -new "${curve[@]}" -nodes -subj "/CN=${service}.${ns}.svc" \
  -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
  -days "$days" -extfile "$dir/ext.cnf" -out "$dir/tls.crt" 2>/dev/null
rm -f "$dir/tls.csr" "$dir/ext.cnf" "$dir/ca.srl"
openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt" >/dev/null || die "verification failed"
echo "gen-webhook-cert: certificate for ${service}.${ns}.svc in $dir" >&2

[[ $apply == 1 ]] || exit 0

"$kubectl" -n "$ns" create secret generic "$secret" --type=kubernetes.io/tls \
  --from-file=tls.crt="$dir/tls.crt" --from-file=tls.key="$dir/tls.key" \
  --from-file=ca.crt="$dir/ca.crt" --dry-run=client -o yaml | "$kubectl" apply -f - >&2

if "$kubectl" get mutatingwebhookconfiguration "$webhook" >/dev/null 2>&1; then
  ca_b64=$(base64 <"$dir/ca.crt" | tr -d '\n')
  count=$("$kubectl" get mutatingwebhookconfiguration "$webhook" \
    -o jsonpath='{range .webhooks[*]}x{end}')
  patch="["
  for ((i = 0; i < ${#count}; i++)); do
    [[ $i -gt 0 ]] && patch+=","
    patch+="{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$ca_b64\"}"
  done
  patch+="]"
  "$kubectl" patch mutatingwebhookconfiguration "$webhook" --type=json -p "$patch" >&2
else
  echo "gen-webhook-cert: MutatingWebhookConfiguration $webhook not found; apply deploy/ and" \
    "run this again to set its caBundle" >&2
fi
