#!/usr/bin/env bash
# Shed levels taken back at a higher p90 while the node has room (server.shed_low_with_room,
# default 0.55) against under shed_low alone (0.4, as before): `veil load --compare`,
# alternating, --repeat ${REPEAT:-3}, stages ${STAGES:-4,5} of ${STAGE_SECONDS:-30} s whose first
# ${WARMUP:-5} s are left out, anonymized VP8 sessions started at once. Results in
# ${OUT:-out/shed-room}/compare (docs/figures.md, "shed levels taken back while the node has room").
# The lone-session case (a level taken under a CPU hog, and given back after it) is
# scripts/shed-hog.sh.
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/shed-room}
STAGE_SECONDS=${STAGE_SECONDS:-30} WARMUP=${WARMUP:-5} compare_servers "$out" low-only with-room \
  'shed_low_with_room = 0.4\n' 'shed_low_with_room = 0.55\n' --stages "${STAGES:-4,5}" --mode anonymize --all-stages
