#!/usr/bin/env bash
# The trimmed detection window (privacy.detect_trim, issue 12's capacity) measured live in one run:
# veil load --compare with the same anonymized sessions on a server that pads YuNet's input
# (640x360 -> 640x384, the default) and on one that trims it (640x352), alternating, --repeat 3.
# Out: out/trim/compare (compare.md, load.json).
# Env: SESSIONS (3,4), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
input=$media/sample_720p30.ivf
out=out/trim
mkdir -p "$out"
printf '[server]\nmax_sessions = "32"\n[privacy]\ndetect_trim = false\n' > "$out/padded.toml"
printf '[server]\nmax_sessions = "32"\n[privacy]\ndetect_trim = true\n' > "$out/trimmed.toml"
"$veil" load --compare "$out/padded.toml" "$out/trimmed.toml" --repeat "${REPEAT:-3}" -i "$input" \
  --stages "${SESSIONS:-3,4}" --stage-seconds "${STAGE_SECONDS:-20}" --warmup "${WARMUP:-8}" \
  --mode anonymize --out "$out/compare"
