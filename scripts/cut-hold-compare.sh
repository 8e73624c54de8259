#!/usr/bin/env bash
# privacy.cut_hold_frames, measured in one run: veil load --compare with the same anonymized
# sessions on a server whose fail-closed frames at a scene cut leave as a whole-frame mosaic
# (cut_hold_frames 0) and on one that sends the previous, already anonymized output instead for up
# to HOLD frames (2, the default), alternating, --repeat 3 each.
# Out: out/cuthold/compare (compare.md, load.json).
# Env: SESSIONS (1,2), HOLD (2), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
compare_servers out/cuthold mosaic "hold${HOLD:-2}" '[privacy]\ncut_hold_frames = 0\n' \
  "[privacy]\ncut_hold_frames = ${HOLD:-2}\n" --stages "${SESSIONS:-1,2}" --mode anonymize
