#!/usr/bin/env bash
# The frame executor (issue 12 item 1), measured in one run: veil load --compare with the same
# anonymized sessions on a server that gives every session a worker thread of its own
# (server.frame_executor = false, the way before) and on one that runs every session's frames on
# one pool of threads, earliest deadline first (the default), alternating, --repeat 3 each.
# Out: out/executor/compare (compare.md, load.json).
# Env: SESSIONS (3), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), MODE (anonymize), SHED (true: load
# shedding on in both, as by default; false: off in both, so that only the scheduling differs),
# BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
input=$media/sample_720p30.ivf
out=out/executor
mkdir -p "$out"
shed=${SHED:-true}
printf '[server]\nmax_sessions = "32"\nshed = %s\nframe_executor = false\n' "$shed" > "$out/threads.toml"
printf '[server]\nmax_sessions = "32"\nshed = %s\nframe_executor = true\n' "$shed" > "$out/pool.toml"
"$veil" load --compare "$out/threads.toml" "$out/pool.toml" --repeat "${REPEAT:-3}" -i "$input" \
  --stages "${SESSIONS:-3}" --stage-seconds "${STAGE_SECONDS:-20}" --warmup "${WARMUP:-8}" \
  --mode "${MODE:-anonymize}" --out "$out/compare"
