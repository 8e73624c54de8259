#!/usr/bin/env bash
# Compares the HTTP server libraries Debian 12 offers under the same pre-auth
# abuse (scripts/http-abuse.py: 1000 idle + 64 slow-header connections, /healthz
# probed every 0.5 s, then a chunked body past 64 KiB), in one run.
#   scripts/http-compare.sh [BUILD_DIR] [SECONDS]
# Needs build/bin/veil_http_servers (built when libmicrohttpd-dev is installed).
set -euo pipefail
BUILD=${1:-build}
SECONDS_UP=${2:-15}
BIN=$BUILD/bin/veil_http_servers
[ -x "$BIN" ] || { echo "http-compare: $BIN missing (apt install libmicrohttpd-dev, then rebuild)" >&2; exit 2; }
cd "$(dirname "$0")/.."
port=18390
for lib in beast mhd httplib; do
  port=$((port + 1))
  "$BIN" "$lib" "$port" & pid=$!
  sleep 0.5
  printf '%-8s ' "$lib"
  /usr/bin/python3 scripts/http-abuse.py --port "$port" --seconds "$SECONDS_UP" --probe-timeout 30 || echo '{"error": "abuse script failed"}'
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
done
