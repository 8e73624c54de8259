#!/usr/bin/env bash
# Staggered keyframes (issue 12 item 1), measured in one run: veil load --compare with the same
# anonymized sessions on a server whose encoders place their own keyframes (sessions started
# together put theirs on the same frame) and on one that spreads the sessions' periodic keyframes
# over the period (the default), alternating, --repeat 3 each.
# Out: out/keyframes/compare (compare.md, load.json).
# Env: SESSIONS (4), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), MODE (anonymize), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
compare_servers out/keyframes aligned staggered 'stagger_keyframes = false\n' 'stagger_keyframes = true\n' \
  --stages "${SESSIONS:-4}" --mode "${MODE:-anonymize}"
