#!/usr/bin/env bash
# Was a failed stage the machine's or veil's? (issue 12; docs/figures.md "the marks at 55052c6,
# and failed 5-session stages second by second"). A fixed-cap server (anonymize, plus $SERVER_ARGS) is given the stages
# ${STAGES:-5,5,5} of ${INPUT:-the 720p VP8 clip} (20-s stages, every stage run), while
# scripts/core-probe.cpp (built here into $BUILD_DIR/core-probe) times a fixed piece of work on
# each core and how late each core's probe wakes, and scripts/metrics-seconds.py reads the
# server's metrics: one joined line a second in ${OUT:-out/probe-stages}/seconds.txt (the
# server's CPU, frames later than 33.3 ms, frames that waited over 10 ms for an executor thread,
# the decode's and encode's mean ms a frame, then per core the latest wake-up and the median
# and largest time of the fixed work, ms). A second whose late frames come with late wake-ups
# of 100 ms or more, or a fixed work much above its idle median (the lines after the load), is
# the machine's; one whose late frames come with queue waits at the server's usual speed is the
# load's.
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/probe-stages}
mkdir -p "$out"
probe=${BUILD_DIR:-build}/core-probe
g++ -O2 -std=c++20 -pthread scripts/core-probe.cpp -o "$probe"
"$probe" > "$out/probe.txt" &
probe_pid=$!
# shellcheck disable=SC2086
veil_serve "$out/server" -- --max-sessions 32 --mode anonymize ${SERVER_ARGS:-}
python3 scripts/metrics-seconds.py "$url" --epoch > "$out/metrics.txt" &
poller=$!
trap 'kill $probe_pid $poller $server 2>/dev/null || true' EXIT
"$veil" load --server "$url" -i "${INPUT:-$media/sample_720p30.ivf}" --stages "${STAGES:-5,5,5}" --stage-seconds 20 \
  --all-stages --label probe-stages --out "$out/load" || true
sleep 5  # the idle seconds after the load: each core's fixed work at rest
kill "$poller" "$probe_pid" || true
kill -TERM "$server"
wait "$server" || true
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
probe = {}
for line in open(out + "/probe.txt"):
    parts = line.split(" | ")
    probe[int(float(parts[0]))] = " | ".join(p.strip() for p in parts[1:])
with open(out + "/seconds.txt", "w") as f:
    for line in open(out + "/metrics.txt"):
        t = int(float(line.split()[0]))
        cores = probe.get(t) or probe.get(t - 1) or "-"
        f.write(f"{line.rstrip()} || {cores}\n")
PY
cat "$out/seconds.txt"
grep '^| probe-stages' "$out/load/load.md" | head -"$(echo "${STAGES:-5,5,5}" | tr ',' '\n' | wc -l)"
