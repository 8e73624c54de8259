#!/usr/bin/env bash
# Shed levels taken back within the node's budget (server.shed_take_back_in_budget=true: a calm
# session's take-back is granted only while the process's CPU in its last second, plus the
# levels granted since, plus this one fits in the cores x server.cpu_share) against each session
# by its own latency alone (false, the default): `veil load --compare`, alternating,
# --repeat ${REPEAT:-3}, stages ${STAGES:-5} of ${STAGE_SECONDS:-30} s whose first ${WARMUP:-5} s
# are left out, anonymized VP8 sessions started at once. Results in
# ${OUT:-out/take-back}/compare (docs/capacity.md, "Taking levels back within the node's budget").
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/take-back}
STAGE_SECONDS=${STAGE_SECONDS:-30} WARMUP=${WARMUP:-5} compare_servers "$out" own-latency in-budget \
  'shed_take_back_in_budget = false\n' 'shed_take_back_in_budget = true\n' --stages "${STAGES:-5}" --mode anonymize --all-stages
