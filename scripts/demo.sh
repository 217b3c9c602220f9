#!/usr/bin/env bash
# make demo: the flagship job on this machine. As root it programs a real
# pinned eBPF map; otherwise it runs with a log sink in the map's place and
# says so. It removes what it created at the end or on Ctrl-C (KEEP=1, or
# `demo -keep`, keeps it; make clean removes it then).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "==> $*"; }

start=$(date +%s)
say "downloading the Go modules (go mod download; cold: a few minutes, then cached)"
go mod download
make --no-print-directory build-demo # says what it builds, how long a first build takes, and its progress
say "built in $(($(date +%s) - start))s"

step=$(date +%s)
say "kube-apiserver and etcd (built once from Go modules into .cache/kube; cold: 5-15 minutes, then cached)"
make --no-print-directory kube-assets
say "kube-apiserver and etcd ready in $(($(date +%s) - step))s"

say "config tests: the flagship's timeline in virtual time, no cluster or map touched (pipeline test)"
./bin/pipeline test examples/flagship

keep=()
[ -n "${KEEP:-}" ] && keep=(-keep)
say "the demo: a kube-apiserver, the flagship job, pods coming and going (about a minute; ports: DEMO_LISTEN, DEMO_AGENT_LISTEN, DEMO_NATS move them)"
exec ./bin/demo "${keep[@]}"
