#!/usr/bin/env bash
# YuNet's forward pass, OpenCV DNN against veil's native engine (detector.engine), measured live
# in one run: veil load --compare with the same anonymized sessions on a server running each,
# alternating, --repeat 3 (issue 12 item 2: less CPU per frame).
# Out: out/detector-engine/compare (compare.md, load.json).
# Env: SESSIONS (3,4), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
compare_servers out/detector-engine opencv native '[detector]\nengine = "opencv"\n' '[detector]\nengine = "native"\n' \
  --stages "${SESSIONS:-3,4}" --mode anonymize
