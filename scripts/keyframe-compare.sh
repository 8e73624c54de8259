#!/usr/bin/env bash
# Staggered keyframes (issue 12 item 1), measured in one run: veil load --compare with the same
# anonymized sessions on a server whose encoders place their own keyframes (sessions started
# together put theirs on the same frame) and on one that spreads the sessions' periodic keyframes
# over the period (the default), alternating, --repeat 3 each.
# Out: out/keyframes/compare (compare.md, load.json).
# Env: SESSIONS (4), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), MODE (anonymize), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
input=$media/sample_720p30.ivf
out=out/keyframes
mkdir -p "$out"
printf '[server]\nmax_sessions = "32"\nstagger_keyframes = false\n' > "$out/aligned.toml"
printf '[server]\nmax_sessions = "32"\nstagger_keyframes = true\n' > "$out/staggered.toml"
"$veil" load --compare "$out/aligned.toml" "$out/staggered.toml" --repeat "${REPEAT:-3}" -i "$input" \
  --stages "${SESSIONS:-4}" --stage-seconds "${STAGE_SECONDS:-20}" --warmup "${WARMUP:-8}" \
  --mode "${MODE:-anonymize}" --out "$out/compare"
