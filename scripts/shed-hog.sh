#!/usr/bin/env bash
# One anonymized VP8 session through a passing CPU hog, with shed levels taken back under
# server.shed_low alone (server.shed_low_with_room=0.4, as before 2026-12-06) and with the room
# rule (the default), one after the other: a ${STAGE_SECONDS:-60}-s session from `veil load`,
# two `veil bench` processes (both cores) from ${HOG_FROM:-12} s to ${HOG_TO:-24} s, the
# session's shed level read each second. Prints a row per second; results in
# ${OUT:-out/shed-hog}. docs/figures.md, "Shed levels taken back while the node has room".
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/shed-hog}
mkdir -p "$out"
hog_from=${HOG_FROM:-12} hog_to=${HOG_TO:-24} secs=${STAGE_SECONDS:-60}
hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2> /dev/null || true; hogs=(); }
trap 'stop_hogs; kill ${server:-} 2>/dev/null || true' EXIT
for cfg in low-only with-room; do
  low=0.55
  [ "$cfg" = low-only ] && low=0.4
  veil_serve "$out/serve-$cfg" -- --max-sessions 8 --mode anonymize --set "server.shed_low_with_room=$low"
  "$veil" load --server "$url" -i "$media/sample_720p30.ivf" --stages 1 --stage-seconds "$secs" --warmup 0 \
    --label "$cfg" --out "$out/load-$cfg" > "$out/load-$cfg.log" 2>&1 &
  load=$!
  : > "$out/levels-$cfg.txt"
  for s in $(seq 1 $((secs + 2))); do
    sleep 1
    if [ "$s" = "$hog_from" ]; then
      for _ in 1 2; do "$veil" bench "$media/sample_720p30.ivf" --repeat 50 > /dev/null 2>&1 & hogs+=($!); done
    fi
    [ "$s" = "$hog_to" ] && stop_hogs
    id=$(curl -s "$url/v1/sessions" | python3 -c "import json,sys; s=json.load(sys.stdin)['sessions']; print(s[0]['id'] if s else '')")
    [ -n "$id" ] || continue
    curl -s "$url/v1/sessions/$id/stats" | python3 -c "
import json, sys
st = json.load(sys.stdin); sh = st['shedding']
print($s, sh['level'], sh['steps_up'], sh['steps_down'], round(st['recent_p99_ms'], 1))" >> "$out/levels-$cfg.txt" || true
  done
  stop_hogs
  wait "$load" || true
  kill -TERM "$server"
  wait "$server" || true
done
echo "| s | low-only: level (up/down) | with room: level (up/down) |"
echo "|---|---|---|"
join <(sort -k1,1 "$out/levels-low-only.txt") <(sort -k1,1 "$out/levels-with-room.txt") | sort -n |
  awk -v f="$hog_from" -v t="$hog_to" '{h = ($1 >= f && $1 < t) ? " (hog)" : ""; printf "| %d%s | %d (%d/%d) | %d (%d/%d) |\n", $1, h, $2, $3, $4, $6, $7, $8}'
for cfg in low-only with-room; do grep "^| $cfg" "$out/load-$cfg/load.md" | head -1; done
