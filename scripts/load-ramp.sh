#!/usr/bin/env bash
# The issue-4 ramp on this machine: starts veil serve on loopback, runs
# veil load 2 -> 4 -> 8 sessions (40 s per stage, every stage) in bypass and
# in anonymize, and leaves the tables in out/ramp-bypass and out/ramp-anonymize.
# Env: STAGES (2,4,8), STAGE_SECONDS (40), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
input=$media/sample_720p30.ivf
mkdir -p out
trap 'kill ${server:-} 2>/dev/null || true' EXIT
veil_serve out/ramp-server -- --max-sessions 16
for mode in bypass anonymize; do
  "$veil" load --server "$url" -i "$input" --stages "${STAGES:-2,4,8}" --stage-seconds "${STAGE_SECONDS:-40}" \
    --mode "$mode" --label "$mode" --all-stages --out "out/ramp-$mode" || true
done
kill -TERM $server
wait $server || true
