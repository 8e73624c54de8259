#!/usr/bin/env bash
# Each session's decode on the frame executor (server.decode_on_executor, issue 12: "latency is
# being lost to how the work is scheduled") measured live in one run: veil load --compare with
# the same anonymized sessions on a server that decodes on each session's ingest thread and on
# one that hands the compressed frame to the executor, which decodes it with the rest of the
# frame's work, earliest deadline first. Read the processing p99 and queue_wait (which, on the
# executor, also holds the wait for the decode) against server CPU per frame.
# Out: out/decode-executor/compare (compare.md, load.json).
# Env: SESSIONS (3,4), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
WARMUP=${WARMUP:-5} compare_servers out/decode-executor on-ingest on-executor 'decode_on_executor = false\n' \
  'decode_on_executor = true\n' --stages "${SESSIONS:-3,4}" --mode anonymize
