#!/usr/bin/env bash
# A session's start-up left out of load shedding (server.shed_warmup_s, issue 12 item 4) measured
# live in one run: veil load --compare, sessions judged from their first window (0) against the
# default 3-s grace, alternating, --repeat 3. The figure to read is each stage's shed level: on
# a node with headroom a session should run at the configured encoder speed (level 0).
# Out: out/shed-warmup/compare (compare.md, load.json).
# Env: SESSIONS (1,3), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
WARMUP=${WARMUP:-5} compare_servers out/shed-warmup judged-at-once grace 'shed_warmup_s = 0\n' 'shed_warmup_s = 3\n' \
  --stages "${SESSIONS:-1,3}" --mode anonymize
