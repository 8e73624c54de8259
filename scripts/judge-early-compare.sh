#!/usr/bin/env bash
# Shedding windows judged as soon as their frames decide an overuse (server.shed_judge_early=true)
# against at their end only (false): `veil load --compare`, alternating, --repeat ${REPEAT:-3},
# stages ${STAGES:-4,5} of ${STAGE_SECONDS:-20} s whose first ${WARMUP:-5} s are left out (as a
# fresh node's offered sessions in scripts/fresh-check.sh), anonymized sessions of INPUT (VP8 by
# default) started at once, frame phases drifting (veil load's default: neighbours' frames come
# to arrive together within the stage). Results in ${OUT:-out/judge-early}/compare
# (docs/capacity.md, "Load shedding", judged early).
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/judge-early}
STAGE_SECONDS=${STAGE_SECONDS:-20} WARMUP=${WARMUP:-5} compare_servers "$out" at-end early \
  'shed_judge_early = false\n' 'shed_judge_early = true\n' --stages "${STAGES:-4,5}" --mode anonymize --all-stages
