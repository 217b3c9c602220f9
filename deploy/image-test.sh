#!/usr/bin/env bash
# Loads the image written by `make image` into podman and runs it with
# deploy/smoke: /healthz and /metrics answer, /readyz turns ready, the
# process runs as uid 65532, and SIGTERM stops it cleanly (exit 0, well
# before podman's 10 s SIGKILL). Installs podman and runc when root and
# missing. The runc runtime and ulimits below are for hosts with hybrid
# cgroups and a low hard RLIMIT_NOFILE, where crun's defaults fail.
set -euo pipefail
archive=$(realpath "${1:?usage: image-test.sh ARCHIVE IMAGE}")
image=${2:?usage: image-test.sh ARCHIVE IMAGE}
cd "$(dirname "$0")"

if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  if [ "$(id -u)" != 0 ]; then
    echo "image-test: podman and runc are needed (apt-get install podman runc)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq podman runc >/dev/null
fi

name=pipeline-image-test-$$
cleanup() { podman rm -f "$name" >/dev/null 2>&1 || true; podman rmi -f "$image" >/dev/null 2>&1 || true; }
trap cleanup EXIT
fail() { echo "image-test: FAIL: $*" >&2; podman logs "$name" >&2 2>&1 || true; exit 1; }

ms() { echo $(( $(date +%s%N) / 1000000 )); }
start=$(ms)
podman load -q -i "$archive" >/dev/null
podman run -d --name "$name" --runtime runc --network host \
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
  -v "$PWD/smoke:/etc/pipeline:ro,Z" \
  "$image" run --listen 127.0.0.1:0 /etc/pipeline >/dev/null

# The kernel picks the port (a fixed or random one may be taken on the
# host's network); the process logs the address it listens on.
addr=
for _ in $(seq 100); do
  addr=$(podman logs "$name" 2>&1 | sed -n 's/.*msg="serving metrics and health" addr=\([0-9.:]*\).*/\1/p' | head -1)
  [ -n "$addr" ] && break
  [ "$(podman inspect -f '{{.State.Running}}' "$name")" = true ] || fail "the container exited before it listened"
  sleep 0.1
done
[ -n "$addr" ] || fail "no 'serving metrics and health' log line"
get() { curl -fsS --max-time 2 "http://$addr$1"; }
for _ in $(seq 100); do
  get /readyz >/dev/null 2>&1 && break
  sleep 0.1
done
[ "$(get /healthz)" = ok ] || fail "/healthz did not answer ok"
ready=$(get /readyz || true)
grep -q '"ready":true' <<<"$ready" || fail "/readyz is not ready: $ready"
metrics=$(get /metrics)
grep -q '^pipeline_build_info' <<<"$metrics" || fail "/metrics has no pipeline_build_info"

pid=$(podman inspect -f '{{.State.Pid}}' "$name")
uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[ "$uid" = 65532 ] || fail "the process runs as uid $uid, not 65532"

t0=$(ms)
podman stop -t 10 "$name" >/dev/null
stop=$(( $(ms) - t0 ))
code=$(podman inspect -f '{{.State.ExitCode}}' "$name")
[ "$code" = 0 ] || fail "exit code $code after SIGTERM (137 means it was killed)"
logs=$(podman logs "$name" 2>&1)
grep -q 'msg=stopped' <<<"$logs" || fail "no 'stopped' log line after SIGTERM"
grep -qF '+ 10.0.0.0/8' <<<"$logs" || fail "the log sink printed no record"
total=$(( $(ms) - start ))
echo "image-test: ok: $image answers /healthz /readyz /metrics as uid 65532, stopped on SIGTERM in ${stop} ms (total ${total} ms)"
