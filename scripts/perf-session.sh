#!/usr/bin/env bash
# Where one live session's CPU goes (issue 12: "use perf and name the top symbols"), next to a
# standalone decode + encode at the same encoder settings, measured in one run.
#   1. `veil bench` on the clip: CPU per frame of the standalone transcode (its bypass row);
#   2. `veil serve` with one session of MODE from `veil load` (one viewer), and
#      `perf record -F 999 -g` of the server process for PERF_S seconds in the middle of the stage;
#   3. the server's samples by library (`perf report --pid`), and its CPU per frame from veil load.
# One bench run and one stage in a row: on a VM whose speed drifts by the minute the ratio it
# prints moves with it (1.32-1.55x on one build in an hour); for issue 12's 1.45x mark use
# scripts/ratio-check.sh, which alternates the two and takes the median.
# Out: out/perf-session/ (bench.json, load/, perf.data, dso.txt). Needs linux-perf.
# Env: SERVE_ARGS (more `veil serve` flags), MODE (anonymize), STAGE_SECONDS (30), PERF_S (12), BUILD_DIR (build), INPUT (the clip:
# $media/sample_720p30.ivf; $media/sample_720p30_h264.mkv for H.264: the session then re-encodes
# H.264, and so does the standalone transcode).
source "$(dirname "$0")/serve-lib.sh"
out=out/perf-session
mode=${MODE:-anonymize}
mkdir -p "$out"
input=${INPUT:-$media/sample_720p30.ivf}
codec=vp8
case "$input" in *.mkv | *.mp4) codec=h264 ;; esac  # a session re-encodes in its publisher's codec
"$veil" bench "$input" --codec "$codec" --repeat 1 --json > "$out/bench.json"
# shellcheck disable=SC2086
veil_serve "$out/serve" -- --set server.max_sessions=4 ${SERVE_ARGS:-}  # e.g. "--set server.shed=false": the configured speed throughout
trap 'kill $server 2>/dev/null || true' EXIT
"$veil" load --server "$url" -i "$input" --stages 1 --stage-seconds "${STAGE_SECONDS:-30}" --warmup 5 \
  --mode "$mode" --out "$out/load" > "$out/load.log" 2>&1 &
load=$!
sleep $(( (${STAGE_SECONDS:-30} - ${PERF_S:-12}) / 2 ))
perf record -F 999 -g -o "$out/perf.data" -p "$server" -- sleep "${PERF_S:-12}" 2> /dev/null
wait $load || true  # veil load exits 1 when the stage misses the mark; this script only reports
perf report -i "$out/perf.data" --pid "$server" --no-children --sort dso -g none --percentage relative 2> /dev/null |
  grep -v '^#' | grep -v '^$' | head -15 > "$out/dso.txt"
echo "== standalone (veil bench, one thread): CPU ms per frame"
python3 -c "import json,sys; j=json.load(open('$out/bench.json')); print(json.dumps({k: j[k] for k in j if 'ms' in k or k=='ratio'}))"
echo "== server, one $mode session (veil load)"
grep -E '^\| ' "$out/load/load.md" | head -3
echo "== server samples by library (perf, $(grep -c . "$out/dso.txt") rows)"
cat "$out/dso.txt"
