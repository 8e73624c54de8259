#!/usr/bin/env bash
# Bypass forwarding against re-encoding (issue 12 item 3), measured in one run:
#  1. veil load --compare: the same bypass sessions on a server that re-encodes them
#     (server.bypass_forward = false) and on one that forwards them (the default),
#     --repeat 3 each, in out/bypass-forward/compare;
#  2. a ramp of forwarded bypass sessions (every stage) in out/bypass-forward/ramp.
# Env: SESSIONS (4), STAGES (4,8,12,16,20,24), STAGE_SECONDS (20), COMPARE (1; 0: the ramp only),
# BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
input=$media/sample_720p30.ivf
secs=${STAGE_SECONDS:-20}
out=out/bypass-forward
mkdir -p "$out"
printf '[server]\nmax_sessions = "32"\nbypass_forward = false\n' > "$out/reencode.toml"
printf '[server]\nmax_sessions = "32"\nbypass_forward = true\n' > "$out/forward.toml"
[ "${COMPARE:-1}" = 0 ] || "$veil" load --compare "$out/reencode.toml" "$out/forward.toml" --repeat 3 -i "$input" \
  --stages "${SESSIONS:-4}" --stage-seconds "$secs" --mode bypass --out "$out/compare"
trap 'kill ${server:-} 2>/dev/null || true' EXIT
veil_serve "$out/server" -- --config "$out/forward.toml"
"$veil" load --server "$url" -i "$input" --stages "${STAGES:-4,8,12,16,20,24}" --stage-seconds "$secs" \
  --mode bypass --label forward --all-stages --out "$out/ramp" || true
kill -TERM $server
wait $server || true
