#!/usr/bin/env bash
# What an open operator page costs the server (issue: operator experience):
# veil load --compare runs the same default configuration with the page closed
# (A) and open (B: every second, per session, stats + history + snapshot.jpg,
# the page's own requests), alternating A B A B A B, and reports each figure's
# range per arm. Tables in out/snapshot-cost/compare.md.
# Env: SESSIONS (2), STAGE_SECONDS (25), REPEAT (3), POLL_MS (1000), BUILD_DIR (build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
mkdir -p out/snapshot-cost
conf=out/snapshot-cost/defaults.toml
echo "# veil serve defaults (no key set): the same server for both arms" > "$conf"
"$build/bin/veil" load --compare "$conf" "$conf" --page-poll-b "${POLL_MS:-1000}" --repeat "${REPEAT:-3}" \
  -i "$build/media/sample_720p30.ivf" --stages "${SESSIONS:-2}" --stage-seconds "${STAGE_SECONDS:-25}" --warmup 5 \
  --out out/snapshot-cost
