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

# The deletion brake: a file source emptied at once, a sink that holds its
# deletes, and max_deletes raised by a hot reload to let them go.
brake() {
  local dir listen=${DEMO_BRAKE_LISTEN:-127.0.0.1:9465} pid
  dir=$(mktemp -d)
  wait_for() { # wait_for WHAT CMD...: up to 10 s
    for _ in $(seq 100); do "${@:2}" && return 0; sleep 0.1; done
    echo "demo: timed out waiting for $1" >&2; return 1
  }
  readyz() { curl -sS "http://$listen/readyz" 2>/dev/null || true; } # 503 while degraded
  servers() { grep -c '^server ' "$dir/backends.cfg" 2>/dev/null || true; }
  rendered() { [ "$(servers)" = "$1" ]; }
  says() { readyz | grep -q "$1"; }
  printf '[%s]' "$(seq -f '{"ip":"10.0.2.%g"}' 1 30 | paste -sd,)" >"$dir/backends.json"
  cat >"$dir/brake.hcl" <<HCL
source "files" "backends" {
  paths  = ["$dir/backends.json"]
  format = "json"
  key    = item.ip
}
sink "template" "proxy" {
  input    = source.files.backends
  path     = "$dir/backends.cfg"
  template = "%{ for r in records }server \${r.key}\\n%{ endfor }"
}
HCL
  ./bin/pipeline run --listen "$listen" --log-level error "$dir/brake.hcl" &
  pid=$!
  # shellcheck disable=SC2064 # expand now: dir and the pid are this step's
  trap "kill $pid 2>/dev/null; rm -rf '$dir'" EXIT
  wait_for "30 backends rendered" rendered 30
  echo '[]' >"$dir/backends.json.tmp" && mv "$dir/backends.json.tmp" "$dir/backends.json"
  wait_for "the brake" says '30 deletes held'
  echo "    /readyz: sink.template.proxy $(readyz | grep -o '"state":"degraded","detail":"[^;"]*' | sed 's/"state":"degraded","detail":"/degraded: /')"
  echo "    backends.cfg still renders $(servers) servers"
  say "the deletion brake: max_deletes = \"100%\" by hot reload releases the held deletes"
  sed -i 's|^  input    = source.files.backends|&\n  max_deletes = "100%"|' "$dir/brake.hcl"
  wait_for "the release" rendered 0
  wait_for "/readyz ready" says '"ready":true'
  echo "    /readyz: ready; backends.cfg renders $(servers) servers"
  kill "$pid" && wait "$pid" || true
  rm -rf "$dir"
  trap - EXIT
}
say "the deletion brake: 30 backends rendered from a JSON file, then the file emptied at once (port: DEMO_BRAKE_LISTEN)"
brake

keep=()
[ -n "${KEEP:-}" ] && keep=(-keep)
say "the demo: a kube-apiserver, the flagship job, pods coming and going (about a minute; ports: DEMO_LISTEN, DEMO_AGENT_LISTEN, DEMO_NATS move them)"
exec ./bin/demo "${keep[@]}"
