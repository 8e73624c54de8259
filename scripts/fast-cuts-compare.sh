#!/usr/bin/env bash
# encoder.fast_cuts, measured in one run: veil load --compare with the same anonymized sessions on
# a server that encodes every frame at the configured speed (fast_cuts false) and on one that
# encodes the first frame of a new picture (a scene cut) at the fastest speed (true, the default),
# alternating, --repeat 3 each. The quality side: `veil bench INPUT --speed-steps --set
# encoder.fast_cuts=false|true` (PSNR of step 0 at the same bitrate).
# Out: out/fastcuts/compare (compare.md, load.json).
# Env: SESSIONS (1,2), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
compare_servers out/fastcuts steady fastcuts '[encoder]\nfast_cuts = false\n' \
  '[encoder]\nfast_cuts = true\n' --stages "${SESSIONS:-1,2}" --mode anonymize
