#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd from Go modules into OUTDIR (the
# module in this folder pins k8s.io/kubernetes and its 31 staging replaces).
# Skips when both binaries exist and answer --version. Cold: ~5-8 minutes.
set -euo pipefail
out=${1:?usage: build.sh OUTDIR}
version=v1.37.2
mkdir -p "$out"
if "$out/kube-apiserver" --version 2>/dev/null | grep -q "$version" && "$out/etcd" --version >/dev/null 2>&1; then
  exit 0
fi
cd "$(dirname "$0")"
echo "building kube-apiserver $version and etcd from Go modules into $out (cold: several minutes)" >&2
start=$(date +%s)
echo "downloading the modules of k8s.io/kubernetes and etcd (go mod download in test/kubeapi)" >&2
go mod download
echo "modules ready in $(( $(date +%s) - start ))s; compiling kube-apiserver" >&2
go build -o "$out/kube-apiserver.tmp" \
  -ldflags "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" \
  k8s.io/kubernetes/cmd/kube-apiserver
echo "compiling etcd" >&2
go build -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
mv "$out/etcd.tmp" "$out/etcd"
echo "built in $(( $(date +%s) - start ))s" >&2
