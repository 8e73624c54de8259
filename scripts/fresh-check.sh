#!/usr/bin/env bash
# A fresh node's prediction against what this machine carries in the same minutes (issue 12).
# capacity-check.sh compares a fresh node's admission with a fixed-cap ramp run minutes before
# it; on a VM whose speed drifts (a standalone transcode read 7.2 and then 9.8 ms a frame 20
# minutes apart on 2026-12-07) that comparison mixes the prediction's error with the drift.
# Here, RUNS times: a fresh `veil serve` (default config, max_sessions auto, nothing learned)
# is offered 8 sessions at once and runs the ones it admits (N); it stops, and at once a
# fixed-cap server runs N+1 and then N+2 sessions: whether the sessions it refused would have
# passed in the same minutes; and what its sessions cost it against its transcode figure (the
# ratio the anonymize prior stands in for). Prints a markdown table; logs and reports in $OUT.
# Env: RUNS (4), STAGE_SECONDS (20), INPUT (the VP8 clip; an .mkv is H.264), SERVER_ARGS
# (more flags for both servers), OUT (out/fresh-check), VEIL_BIN / BUILD_DIR.
source "$(dirname "$0")/serve-lib.sh"
runs=${RUNS:-4}
secs=${STAGE_SECONDS:-20}
out=${OUT:-out/fresh-check}
input=${INPUT:-$media/sample_720p30.ivf}
codec=vp8
case "$input" in *.mkv | *.mp4) codec=h264 ;; esac
mkdir -p "$out"
server=
trap 'kill ${server:-} 2>/dev/null || true' EXIT
stop_server() {
  kill -TERM "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
}
# stage FILE INDEX: "sessions p99 pass" of a load report's stage (from 0; -1: the last)
stage() {
  python3 - "$1" "$2" << 'EOF'
import json, sys
try:
    stages = json.load(open(sys.argv[1]))["runs"][0]["stages"]
    s = stages[int(sys.argv[2])]
    print(s["sessions"], "%.2f" % s["processing_ms"]["p99"], "pass" if s["passed"] else "FAIL",
          "%.0f%%" % s["server_cpu_pct"])
except (OSError, LookupError, ValueError):
    print("- - - -")
EOF
}
echo "| run | fresh node's startup transcode, $codec | it admits of 8 (prior) | its sessions: p99, pass, CPU | they cost (learned), x its transcode figure | then fixed cap, admitted+1 | admitted+2 |"
echo "|---|---|---|---|---|---|---|"
for i in $(seq 1 "$runs"); do
  # shellcheck disable=SC2086
  veil_serve "$out/fresh-$i" -- ${SERVER_ARGS:-} || exit 1
  timing=$(grep -o "$codec [0-9.]* ms\( (cores [^)]*)\)\?" "$out/fresh-$i.log" | head -1)
  "$veil" load --server "$url" -i "$input" --stages 8 --stage-seconds "$secs" --run-admitted \
    --label "fresh $i" --out "$out/fresh-$i" > "$out/fresh-$i.load.log" 2>&1 || true
  # What its sessions taught it: CPU a 720p frame, and that over its transcode figure (the prior's
  # place: PriorRatio, server/capacity.cpp).
  learned=$(curl -s "$url/readyz" | python3 -c '
import json, sys
c = json.load(sys.stdin)["capacity"]
for k in c["costs"]:
    if k["codec"] == sys.argv[1] and k["mode"] == "anonymize" and k["samples"] > 0:
        print("%.2f ms, %.2fx %.2f" % (k["cpu_ms_per_720p_frame"], k["cpu_per_frame_vs_transcode"], c["transcode_ms_by_codec"][sys.argv[1]]))
        break
else:
    print("-")' "$codec" 2> /dev/null || echo "-")
  stop_server
  read -r n p99 pass cpu <<< "$(stage "$out/fresh-$i/load.json" -1)"
  if ! [[ "$n" =~ ^[0-9]+$ ]]; then
    echo "| $i | $timing | (no report: $out/fresh-$i.load.log) | | | | |"
    continue
  fi
  # shellcheck disable=SC2086
  veil_serve "$out/fixed-$i" -- --max-sessions 32 ${SERVER_ARGS:-} || exit 1
  "$veil" load --server "$url" -i "$input" --stages "$((n + 1)),$((n + 2))" --stage-seconds "$secs" --all-stages \
    --label "fixed $i" --out "$out/fixed-$i" > "$out/fixed-$i.load.log" 2>&1 || true
  stop_server
  read -r _ p1 s1 c1 <<< "$(stage "$out/fixed-$i/load.json" 0)"
  read -r _ p2 s2 c2 <<< "$(stage "$out/fixed-$i/load.json" 1)"
  echo "| $i | $timing | $n | $p99 ms, $pass, $cpu | $learned | $p1 ms, $s1, $c1 | $p2 ms, $s2, $c2 |"
done
