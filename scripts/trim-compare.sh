#!/usr/bin/env bash
# The trimmed detection window (privacy.detect_trim, issue 12's capacity) measured live in one run:
# veil load --compare with the same anonymized sessions on a server that pads YuNet's input
# (640x360 -> 640x384, the default) and on one that trims it (640x352), alternating, --repeat 3.
# Out: out/trim/compare (compare.md, load.json).
# Env: SESSIONS (3,4), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
compare_servers out/trim padded trimmed '[privacy]\ndetect_trim = false\n' '[privacy]\ndetect_trim = true\n' \
  --stages "${SESSIONS:-3,4}" --mode anonymize
