#!/usr/bin/env bash
# What re-timing an idle node does to its transcode figure (server.retime_s, docs/capacity.md):
# starts `veil serve` RUNS times (6), one after the other, reads /readyz at startup and again
# once the node has timed its transcode again while idle: by default with the product's settings
# (server.retime_first_s 5 s: the 2 re-timings that complete its 3 kept timings, within seconds);
# with RETIME=S, --retime-s S and no early re-timings, 3 re-timings (the check before
# retime_first_s). Prints per start: the startup timing per codec, the three kept timings, the figure it then
# admits by, and the VP8 anonymized sessions it admits before and after. HOG (set): a CPU hog
# (`veil bench` on the 720p clip, both cores) runs through each start's own timing and stops
# before the re-timings, as a burst of other work at startup would. Output: a markdown table.
source "$(dirname "$0")/serve-lib.sh"
runs=${RUNS:-6}
retime=${RETIME:-}
if [ -n "$retime" ]; then flags=(--retime-s "$retime" --retime-first-s 0); want=3; wait_s=$((retime * 10))
else flags=(); want=2; wait_s=60; fi
out=${OUT:-out/retime}
mkdir -p "$out"
hogs=()
stop_hogs() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done; hogs=(); }
trap 'stop_hogs; kill ${server:-} 2>/dev/null || true' EXIT
readyz() { curl -s "$url/readyz"; }
echo "| start | hog | startup vp8 / h264 ms | kept vp8 timings, ms | kept h264 timings, ms | figure after: vp8 / h264 ms | admits (vp8 anonymized): at startup -> after | after, s from ready |"
echo "|---|---|---|---|---|---|---|---|"
for i in $(seq 1 "$runs"); do
  if [ -n "${HOG:-}" ]; then
    for _ in 1 2; do "$veil" bench "$media/sample_720p30.ivf" > /dev/null 2>&1 & hogs+=($!); done
    sleep 1
  fi
  veil_serve "$out/serve-$i" -- "${flags[@]}" || exit 1
  stop_hogs
  readyz > "$out/before-$i.json"
  t0=$(date +%s.%N)
  for _ in $(seq 1 $((wait_s * 4))); do
    sleep 0.25
    readyz > "$out/after-$i.json"
    python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["capacity"]["retimes"] >= int(sys.argv[2]) else 1)' \
      "$out/after-$i.json" "$want" && break
  done
  t1=$(date +%s.%N)
  kill -TERM "$server"; wait "$server" || true
  python3 - "$out/before-$i.json" "$out/after-$i.json" "$i" "${HOG:+yes}" "$t0" "$t1" <<'EOF'
import json, sys
b, a = (json.load(open(p))["capacity"] for p in sys.argv[1:3])
t = lambda c, k: " / ".join(f"{c[k][x]:.2f}" for x in ("vp8", "h264"))
kept = lambda c, x: ", ".join(f"{v:.2f}" for v in c["transcode_timings_ms_by_codec"][x])
print(f"| {sys.argv[3]} | {sys.argv[4] or 'no'} | {t(b, 'transcode_ms_by_codec')} | {kept(a, 'vp8')} | {kept(a, 'h264')} | "
      f"{t(a, 'transcode_ms_by_codec')} | {b['sessions']} -> {a['sessions']} (retimes {a['retimes']}) | {float(sys.argv[6]) - float(sys.argv[5]):.1f} |")
EOF
done
