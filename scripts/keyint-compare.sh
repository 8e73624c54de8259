#!/usr/bin/env bash
# The periodic keyframe's interval (encoder.keyint) measured live in one run: veil load --compare
# with the same anonymized sessions on a server with a keyframe every A frames and one with a
# keyframe every B, alternating, --repeat 3. A VP8 keyframe at the default speed costs ~1.7x an
# inter frame; at 60 frames they are 1.7% of a session's frames, so the p99 of the encode stage is
# a keyframe's. Viewers do not wait for the periodic one: a new viewer, a mode switch and a
# viewer's reported loss each force one (rate-limited).
# Out: out/keyint/compare (compare.md, load.json).
# Env: SESSIONS (4), A (60), B (240), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
a=${A:-60} b=${B:-240}
WARMUP=${WARMUP:-5} compare_servers out/keyint "keyint$a" "keyint$b" "[encoder]\nkeyint = $a\n" \
  "[encoder]\nkeyint = $b\n" --stages "${SESSIONS:-4}" --mode anonymize
