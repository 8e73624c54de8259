#!/usr/bin/env bash
# The issue-4 ramp on this machine: starts veil serve on loopback, runs
# veil load 2 -> 4 -> 8 sessions (40 s per stage, every stage) in bypass and
# in anonymize, and leaves the tables in out/ramp-bypass and out/ramp-anonymize.
# Env: STAGES (2,4,8), STAGE_SECONDS (40), BUILD_DIR (build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export VEIL_ASSETS=${VEIL_ASSETS:-$root/../shared/assets}
veil=${BUILD_DIR:-build}/bin/veil
input=${BUILD_DIR:-build}/media/sample_720p30.ivf
mkdir -p out
"$veil" serve --listen 127.0.0.1:0 --max-sessions 16 > out/ramp-server.out 2> out/ramp-server.log &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  url=$(sed -n 's/^veil serve: listening on //p' out/ramp-server.out)
  [ -n "${url:-}" ] && break
  sleep 0.1
done
for mode in bypass anonymize; do
  "$veil" load --server "$url" -i "$input" --stages "${STAGES:-2,4,8}" --stage-seconds "${STAGE_SECONDS:-40}" \
    --mode "$mode" --label "$mode" --all-stages --out "out/ramp-$mode" || true
done
kill -TERM $server
wait $server || true
