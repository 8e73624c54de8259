#!/usr/bin/env bash
# Sessions' detections spread over the detection period (server.stagger_detections, issue 12:
# "latency is being lost to how the work is scheduled") measured live in one run: veil load
# --compare with the same anonymized sessions on a server that places each session's detection
# frames in the widest gap between the others' and on one that leaves them where each session's
# first frame put them, alternating, --repeat 3. Read the processing p99 and the detect stage
# (submit -> result: the queue in front of the one inference thread) against the fail-closed frames.
# Out: out/detect-stagger/compare (compare.md, load.json).
# Env: SESSIONS (3,4), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
WARMUP=${WARMUP:-5} compare_servers out/detect-stagger unstaggered staggered 'stagger_detections = false\n' \
  'stagger_detections = true\n' --stages "${SESSIONS:-3,4}" --mode anonymize
