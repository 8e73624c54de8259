#!/usr/bin/env bash
# The in-process target's detections on the frame executor (server.detect_on_executor, issue 12)
# measured live in one run: veil load --compare with the same anonymized sessions on a server
# whose detections run on their own inference thread (the OS time-slices it against the
# executor's threads) and on one that runs them on the executor, each batch due as a frame handed
# over when it was asked for. Read the processing p99 and queue_wait against server CPU per
# frame, and the detect stage (submit to result) with the fail-closed frames: a detection that
# waits longer leaves older masks and cut frames held longer.
# Out: out/detect-executor/compare (compare.md, load.json).
# Env: SESSIONS (4,5), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
WARMUP=${WARMUP:-5} compare_servers out/detect-executor own-thread on-executor 'detect_on_executor = false\n' \
  'detect_on_executor = true\n' --stages "${SESSIONS:-4,5}" --mode anonymize
