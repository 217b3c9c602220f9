#!/usr/bin/env bash
# make demo: the flagship job on this machine. As root it programs a real
# pinned eBPF map; otherwise it runs with a log sink in the map's place and
# says so. It removes what it created at the end or on Ctrl-C (KEEP=1, or
# `demo -keep`, keeps it; make clean removes it then).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "==> $*"; }

say "building bin/pipeline and bin/demo (go build; a cold machine first downloads the Go modules: minutes)"
start=$(date +%s)
go mod download
make --no-print-directory build
CGO_ENABLED=0 go build -o bin/demo ./cmd/demo
say "built in $(($(date +%s) - start))s"

say "kube-apiserver and etcd (built once from Go modules into .cache/kube; cold: several minutes)"
make --no-print-directory kube-assets

say "config tests: the flagship's timeline in virtual time, no cluster or map touched (pipeline test)"
./bin/pipeline test examples/flagship

keep=()
[ -n "${KEEP:-}" ] && keep=(-keep)
exec ./bin/demo "${keep[@]}"
