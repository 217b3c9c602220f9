#!/usr/bin/env bash
# Prepares this machine for `make test` (and `make demo`): the commands the
# tests call (ip, ping, dot, diff; podman and runc for the image test; haproxy
# for the template sink, chromium for the web console, nvim for the language
# server, node for the VS Code extension's script), a bpffs at /sys/fs/bpf, and the Go
# modules. As root it installs what is missing with apt-get and mounts the
# bpffs; otherwise it says what it cannot set up and how to do it. It is a
# no-op, apart from a few lines, on a machine that has everything.
#
#   scripts/setup.sh          set up for make test
#   scripts/setup.sh --check  only report what is missing (exit 1 when something is)
set -euo pipefail
cd "$(dirname "$0")/.."

check_only=false
[ "${1:-}" = --check ] && check_only=true

say() { echo "setup: $*" >&2; }
root=false
[ "$(id -u)" = 0 ] && root=true
problems=0

# command -> Debian package that provides it
declare -A pkg_of=([ip]=iproute2 [ping]=iputils-ping [dot]=graphviz [diff]=diffutils [podman]=podman [runc]=runc
  [haproxy]=haproxy [chromium]=chromium [nvim]=neovim [curl]=curl [node]=nodejs)
missing=()
for cmd in ip ping dot diff podman runc haproxy chromium nvim curl node; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${pkg_of[$cmd]}")
done

if ((${#missing[@]})); then
  if $check_only; then
    say "missing packages: ${missing[*]} (install: apt-get install ${missing[*]})"
    problems=1
  elif $root && command -v apt-get >/dev/null 2>&1; then
    say "installing ${missing[*]} with apt-get (apt-get update first)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    say "installed ${missing[*]}"
  elif $root; then
    say "cannot install ${missing[*]}: no apt-get on this machine; install them with your package manager"
    problems=1
  else
    say "cannot install ${missing[*]}: not root. Run \`sudo apt-get install ${missing[*]}\` (or make test as root);"
    say "  tests that need them skip and say so"
    problems=1
  fi
fi

bpffs_mounted() { [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ]; }
if ! bpffs_mounted; then
  if $check_only; then
    say "no bpffs at /sys/fs/bpf (as root: mount -t bpf bpf /sys/fs/bpf)"
    problems=1
  elif $root; then
    say "mounting a bpffs at /sys/fs/bpf"
    mkdir -p /sys/fs/bpf
    mount -t bpf bpf /sys/fs/bpf
  else
    say "no bpffs at /sys/fs/bpf and not root: the eBPF and XDP tests skip (as root: mount -t bpf bpf /sys/fs/bpf)"
    problems=1
  fi
fi

if ! $root; then
  say "not root: tests of real BPF maps and XDP skip (they need CAP_BPF and CAP_NET_ADMIN); run make test as root to run them"
fi

if $check_only; then
  exit "$problems"
fi

# Module download: silent and long on a cold machine, so say it first.
say "downloading Go modules (go mod download; cold: several minutes, warm: instant)"
start=$(date +%s)
go mod download
say "modules ready in $(($(date +%s) - start))s"
exit 0
