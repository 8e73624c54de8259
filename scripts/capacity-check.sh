#!/usr/bin/env bash
# Admission by measured capacity, checked against what the machine really carries (issue 12):
# for each kind of session (vp8 anonymize, vp8 bypass, h264 anonymize),
#  1. "measured": a server with a fixed cap of 32 ramps sessions (every stage) and the load
#     tool says which counts pass (every session > 25 fps and p99 processing < 33.3 ms);
#     /readyz then gives the capacity the model predicts, learned from those sessions;
#  2. "auto": a fresh server with server.max_sessions = auto learns on a ramp, then is offered 8
#     anonymized (24 forwarded) sessions at once; the stage it refuses in part runs with the sessions it admitted (veil
#     load --run-admitted); the tables show how many it admitted and whether they passed.
# Tables in $OUT (out/capacity). Env: STAGE_SECONDS (20), SERVER_ARGS (more flags for both servers, e.g.
# "--detect-every 1"), AUTO_ARGS (more flags for the auto server,
# e.g. "--cpu-share 0.75"), IDLE_FIRST (seconds the auto server waits idle before its first stage), SKIP_MEASURED (set: only the auto server), FRESH (set: the auto server
# is offered its 8 (24) at once with nothing learned, no ramp: what the priors admit), VEIL_BIN (another
# build of veil, for a before/after run), AUTO_ALL_STAGES (set: the auto run tries every stage even after one fails, to show what it admits), BUILD_DIR (build), KINDS (all four: a space-separated
# subset of vp8-anonymize vp8-bypass h264-anonymize h264-bypass, or vp8-full_blur h264-full_blur).
source "$(dirname "$0")/serve-lib.sh"
secs=${STAGE_SECONDS:-20}
out=${OUT:-out/capacity}
mkdir -p "$out"
server=
start_server() {  # $1: log name, rest: flags
  local name=$1
  shift
  veil_serve "$out/$name" -- "$@" || exit 1
}
stop_server() {
  kill -TERM "$server" 2>/dev/null || true
  wait "$server" || true
}
trap 'kill $server 2>/dev/null || true' EXIT
capacity() {  # the model's capacity for sessions like the ones just run
  curl -s "$url/readyz" | python3 -c '
import json, sys
j = json.load(sys.stdin)
c = j["capacity"]
print(json.dumps({"capacity_sessions": c["sessions"], "kind": c["kind"], "headroom": j["headroom"],
                  "mosaic_encode_ms_by_step": c.get("mosaic_encode_ms_by_step"),
                  "mosaic_admit_encode_ratio_by_codec": c.get("mosaic_admit_encode_ratio_by_codec"),
                  "cpu_budget_ms_per_s": c.get("cpu_budget_ms_per_s"),
                  "transcode_ms": c["transcode_ms_by_codec"], "limit_sessions": round(c["limit_sessions"], 2),
                  "costs": [k for k in c["costs"] if k["samples"] > 0],
                  "admit_speed_step": c.get("admit_speed_step"), "encode_ms_by_step": c.get("encode_ms_by_step"),
                  "admit_encode_ratio_by_codec": c.get("admit_encode_ratio_by_codec"),
                  "admit_encode_ratio_paired_samples_by_codec": c.get("admit_encode_ratio_paired_samples_by_codec")}))'
}
run() {  # $1 label, $2 mode, $3 input, $4 stages, $5 auto stages
  local label=$1 mode=$2 input=$3 stages=$4 auto=$5
  case " ${KINDS:-vp8-anonymize vp8-bypass h264-anonymize h264-bypass} " in *" $label "*) ;; *) return 0 ;; esac
  if [ -z "${SKIP_MEASURED:-}" ]; then
    # shellcheck disable=SC2086
    start_server "$label-measured" --max-sessions 32 --mode "$mode" ${SERVER_ARGS:-}
    "$veil" load --server "$url" -i "$input" --stages "$stages" --stage-seconds "$secs" --all-stages \
      --label "$label fixed cap" --out "$out/$label-measured" || true
    capacity > "$out/$label-model.json"
    stop_server
  fi
  # shellcheck disable=SC2086
  [ -n "${FRESH:-}" ] && auto=${auto##*,}  # the offer alone
  start_server "$label-auto" --mode "$mode" ${SERVER_ARGS:-} ${AUTO_ARGS:-}
  curl -s "$url/readyz" > "$out/$label-auto-readyz-start.json"
  # IDLE_FIRST=S: the auto server waits S s idle before its first stage: it times its transcode
  # again meanwhile (server.retime_first_s, 5 s: twice within ~13 s of a 2-core node's start;
  # then every server.retime_s). readyz-start.json has what its startup timing alone admits.
  [ -n "${IDLE_FIRST:-}" ] && sleep "$IDLE_FIRST"
  curl -s "$url/readyz" > "$out/$label-auto-readyz-before.json"
  "$veil" load --server "$url" -i "$input" --stages "$auto" --stage-seconds "$secs" ${AUTO_ALL_STAGES:+--all-stages} --run-admitted \
    --label "$label auto" --out "$out/$label-auto" || true
  capacity > "$out/$label-auto-model.json"
  stop_server
  [ -n "${SKIP_MEASURED:-}" ] || echo "== $label: model after the measured ramp: $(cat "$out/$label-model.json")"
}
# The auto servers learn on a ramp, then are offered 8 anonymized (24 forwarded) sessions at once.
run vp8-anonymize anonymize "$media/sample_720p30.ivf" 1,2,3,4,5 1,2,3,4,8
run vp8-bypass bypass "$media/sample_720p30.ivf" 12,16,20 12,16,24
run h264-anonymize anonymize "$media/sample_720p30_h264.mkv" 1,2,3,4,5 1,2,3,8
run h264-bypass bypass "$media/sample_720p30_h264.mkv" 8,12,16 8,12,16,24
# Only when KINDS names them: full blur (a whole-frame mosaic, re-encoded), for its prior.
run vp8-full_blur full_blur "$media/sample_720p30.ivf" 2,4,6 2,4,8
run h264-full_blur full_blur "$media/sample_720p30_h264.mkv" 2,4,6,7 2,4,8
for f in "$out"/${KINDS:+[vh]}*/load.md; do echo "== $f"; grep '^|' "$f"; done
# Predicted against measured, per kind (scripts/capacity-summary.py; MEASURED_FROM: another
# run's OUT for its fixed-cap ramps, with SKIP_MEASURED).
echo "== predicted against measured"
python3 "$(dirname "$0")/capacity-summary.py" "$out" ${MEASURED_FROM:+--measured-from "$MEASURED_FROM"} || true
