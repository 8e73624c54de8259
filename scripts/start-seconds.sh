#!/usr/bin/env bash
# Sessions started together, second by second (docs/figures.md, "Starting at the node's load"):
# a server (fixed cap 32, anonymize, plus $SERVE_ARGS, e.g. "--set server.shed_start_by_load=false")
# is given ${SESSIONS:-5} VP8 sessions at once for ${STAGE_SECONDS:-20} s, with nothing left out
# as warm-up, while scripts/metrics-seconds.py prints its metrics each second. Output in
# ${OUT:-out/start-seconds}: seconds.txt, the load report, the server's log (its shed_level events).
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/start-seconds}
mkdir -p "$out"
# shellcheck disable=SC2086
veil_serve "$out/server" -- --max-sessions 32 --mode anonymize ${SERVE_ARGS:-}
python3 scripts/metrics-seconds.py "$url" > "$out/seconds.txt" &
poller=$!
"$veil" load --server "$url" -i "$media/sample_720p30.ivf" --stages "${SESSIONS:-5}" --stage-seconds "${STAGE_SECONDS:-20}" \
  --warmup 0 --label "start-seconds" --out "$out/load" || true
kill "$poller"
kill -TERM "$server"
wait "$server" || true
cat "$out/seconds.txt"
grep '^| start-seconds' "$out/load/load.md" | head -1
