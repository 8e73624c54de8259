#!/usr/bin/env bash
# A neighbour process starts mid-stage: how many frames leave later than the budget before the
# sessions have shed enough, with shedding windows judged at their end (server.shed_judge_early
# false) and as soon as their frames decide it (true), alternating, ${REPEAT:-4} times each.
# Each run: a fresh server (fixed cap 32), ${SESSIONS:-3} anonymized sessions of INPUT (the VP8
# clip) for ${STAGE_SECONDS:-30} s, the first ${WARMUP:-5} s left out; from ${HOG_FROM:-12} s to
# ${HOG_TO:-20} s of the stage ${HOGS:-1} `veil bench` process(es) take CPU beside it. Prints a
# row per run from its load report (late frames, the worst second's, p99, mean shed level).
# Results in ${OUT:-out/judge-early-hog}. docs/figures.md, "Shedding windows judged early".
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/judge-early-hog}
mkdir -p "$out"
input=${INPUT:-$media/sample_720p30.ivf}
hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2> /dev/null || true; hogs=(); }
trap 'stop_hogs; kill ${server:-} 2>/dev/null || true' EXIT
echo "| run | judged | sessions | late frames (> p99 mark) | in the worst second | p99 ms | shed level mean | CPU | pass |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "${REPEAT:-4}"); do
  for cfg in at-end early; do
    early=false
    [ "$cfg" = early ] && early=true
    veil_serve "$out/serve-$cfg-$r" -- --max-sessions 32 --mode anonymize --set "server.shed_judge_early=$early"
    "$veil" load --server "$url" -i "$input" --stages "${SESSIONS:-3}" --stage-seconds "${STAGE_SECONDS:-30}" \
      --warmup "${WARMUP:-5}" --label "$cfg" --out "$out/load-$cfg-$r" > "$out/load-$cfg-$r.log" 2>&1 &
    load=$!
    sleep "${HOG_FROM:-12}"
    for _ in $(seq 1 "${HOGS:-1}"); do "$veil" bench "$input" --repeat 50 > /dev/null 2>&1 & hogs+=($!); done
    sleep $((${HOG_TO:-20} - ${HOG_FROM:-12}))
    stop_hogs
    wait "$load" || true
    kill -TERM "$server"
    wait "$server" || true
    python3 - "$out/load-$cfg-$r/load.json" "$r" "$cfg" << 'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))["runs"][0]["stages"][0]
    lf = s["late_frames"]
    print("| %s | %s | %d | %d | %d | %.2f | %.2f | %.0f%% | %s |" % (sys.argv[2], sys.argv[3], s["sessions"], lf["frames"],
          lf["worst_slice_frames"], s["processing_ms"]["p99"], s["shed_level"]["mean"], s["server_cpu_pct"], "yes" if s["passed"] else "no"))
except (OSError, LookupError, ValueError) as e:
    print("| %s | %s | (no report: %s) |" % (sys.argv[2], sys.argv[3], e))
PY
  done
done
