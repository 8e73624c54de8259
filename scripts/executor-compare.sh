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
shed=${SHED:-true}
compare_servers out/executor threads pool "shed = $shed\nframe_executor = false\n" "shed = $shed\nframe_executor = true\n" \
  --stages "${SESSIONS:-3}" --mode "${MODE:-anonymize}"
