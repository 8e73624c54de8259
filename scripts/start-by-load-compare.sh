#!/usr/bin/env bash
# Sessions that start together at the node's load (server.shed_start_by_load) against every
# session starting at the configured encoder speed: `veil load --compare`, alternating,
# --repeat ${REPEAT:-3}, stages ${STAGES:-4,5} of ${STAGE_SECONDS:-20} s whose first
# ${WARMUP:-5} s are left out (as scripts/capacity-check.sh's ramps), anonymized VP8 sessions
# started at once. Results in ${OUT:-out/start-by-load}/compare (docs/figures.md, "Starting at
# the node's load").
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/start-by-load}
WARMUP=${WARMUP:-5} compare_servers "$out" off on 'shed_start_by_load = false\n' 'shed_start_by_load = true\n' \
  --stages "${STAGES:-4,5}" --mode anonymize --all-stages
