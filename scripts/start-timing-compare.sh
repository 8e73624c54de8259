#!/usr/bin/env bash
# What a fresh node's transcode figure reads at startup, for two builds started alternately:
# BEFORE (a `veil` binary, required) and this build (or VEIL_BIN), RUNS (6) starts each, one at a
# time, each read from /readyz at once and stopped. Prints per start each build's VP8 / H.264
# figure, the cores it timed (builds that time per core: capacity.transcode_last_timing_ms_by_core)
# and the anonymized VP8 sessions it admits. Output: a markdown table; logs in OUT (out/start-timing).
source "$(dirname "$0")/serve-lib.sh"
runs=${RUNS:-6}
out=${OUT:-out/start-timing}
before=${BEFORE:?BEFORE=path of the other veil binary}
after=$veil
mkdir -p "$out"
trap 'kill ${server:-} 2>/dev/null || true' EXIT
one() {  # one start of $veil: a table cell
  veil_serve "$out/$1" -- || return 1
  curl -s "$url/readyz" > "$out/$1.json"
  kill -INT "$server"; wait "$server" || true
  python3 - "$out/$1.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["capacity"]
t = c["transcode_ms_by_codec"]
cores = c.get("transcode_last_timing_ms_by_core", {})
per = lambda x: (" (" + ", ".join(f"{k}: {v:.1f}" for k, v in sorted(cores[x].items())) + ")") if x in cores and len(cores[x]) > 1 else ""
print(f"{t['vp8']:.2f}{per('vp8')} / {t['h264']:.2f}{per('h264')}, admits {c['sessions']}", end="")
PY
}
echo "| start | before: vp8 / h264 ms, admits (vp8 anonymized) | after: vp8 / h264 ms (per core), admits |"
echo "|---|---|---|"
for i in $(seq 1 "$runs"); do
  veil=$before; b=$(one "before-$i")
  veil=$after; a=$(one "after-$i")
  echo "| $i | $b | $a |"
done
