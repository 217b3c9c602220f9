#!/usr/bin/env bash
# make demo: the flagship job on this machine (root needed for the eBPF map).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "make demo programs a real pinned eBPF map: run it as root (sudo make demo)." >&2
  exit 1
fi
exec go run ./cmd/demo
