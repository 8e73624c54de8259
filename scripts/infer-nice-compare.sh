#!/usr/bin/env bash
# The inference threads at a lower priority than the frames' (inference.nice, issue 12: "latency
# is being lost to how the work is scheduled") measured live in one run: veil load --compare with
# the same anonymized sessions on a server whose detection threads run at nice 0 and at nice 10,
# alternating, --repeat 3. Read the processing p99 (the frames' tail) against the fail-closed
# frames and the detect stage (the detections' own latency, which has the privacy bound's slack).
# The inference thread is the in-process target's own only with server.detect_on_executor off
# (its default is on since 2026-12-05), so both servers run with it off.
# Out: out/infer-nice/compare (compare.md, load.json).
# Env: SESSIONS (3,4), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), NICE (10), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
WARMUP=${WARMUP:-5} compare_servers out/infer-nice nice0 "nice${NICE:-10}" \
  'detect_on_executor = false\n[inference]\nnice = 0\n' \
  "detect_on_executor = false\n[inference]\nnice = ${NICE:-10}\n" --stages "${SESSIONS:-3,4}" --mode anonymize
