#!/usr/bin/env bash
# privacy.cut_wait_ms, measured in one run: veil load --compare with the same anonymized sessions
# on a server whose frames at a scene cut leave as a whole-frame mosaic until the new shot's
# detection is back (cut_wait_ms 0, the default) and on one where such a frame waits up to
# WAIT_MS for its own detection, alternating, --repeat 3 each.
# Out: out/cutwait/compare (compare.md, load.json).
# Env: SESSIONS (1,2), WAIT_MS (15), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
compare_servers out/cutwait nowait "wait${WAIT_MS:-15}" '' "[privacy]\ncut_wait_ms = ${WAIT_MS:-15}\n" \
  --stages "${SESSIONS:-1,2}" --mode anonymize
