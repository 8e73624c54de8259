#!/usr/bin/env bash
# Load shedding (issue 12 items 4-5), measured in one run:
#  1. veil load --compare: the same anonymized sessions on a server that never sheds
#     (server.shed = false) and on one that does (the default), --repeat 3 each, in
#     out/shed/compare;
#  2. a ramp of anonymized sessions on each (every stage), in out/shed/ramp-noshed and
#     out/shed/ramp-shed; load.json has each stage's shed level (mean, max) at its end;
#  3. what each encoder speed step costs in quality: veil bench --speed-steps, in out/shed/steps.md.
# Env: SESSIONS (4), STAGES (2,3,4,5,6), STAGE_SECONDS (25), WARMUP (8), COMPARE (1; 0: ramps only),
# BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
input=$media/sample_720p30.ivf
secs=${STAGE_SECONDS:-25}
warm=${WARMUP:-8}
out=out/shed
mkdir -p "$out"
printf '[server]\nmax_sessions = "32"\nshed = false\n' > "$out/noshed.toml"
printf '[server]\nmax_sessions = "32"\nshed = true\n' > "$out/shed.toml"
"$veil" bench --speed-steps "$input" > "$out/steps.md"
cat "$out/steps.md"
[ "${COMPARE:-1}" = 0 ] || "$veil" load --compare "$out/noshed.toml" "$out/shed.toml" --repeat 3 -i "$input" \
  --stages "${SESSIONS:-4}" --stage-seconds "$secs" --warmup "$warm" --mode anonymize --out "$out/compare"
trap 'kill ${server:-} 2>/dev/null || true' EXIT
for c in noshed shed; do
  veil_serve "$out/server-$c" -- --config "$out/$c.toml"
  "$veil" load --server "$url" -i "$input" --stages "${STAGES:-2,3,4,5,6}" --stage-seconds "$secs" --warmup "$warm" \
    --mode anonymize --label "$c" --all-stages --out "$out/ramp-$c" || true
  kill -TERM $server
  wait $server || true
done
