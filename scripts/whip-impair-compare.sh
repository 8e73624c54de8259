#!/usr/bin/env bash
# Two veil builds under the same impaired WHIP publisher, alternating, in one run: the browser
# test tests/web/whip_client.test.mjs (Chromium publishing through tests/tools/udp_impair.py:
# 15 s of 5% loss, 30 ms jitter, 1% reordering) run REPEAT times with each build. Prints each
# run's figures for the 8 s before the impairment, the 15 s of it and the seconds after, and
# whether the run passed.
# Usage: scripts/whip-impair-compare.sh A_VEIL B_VEIL   (e.g. /tmp/veil-before build/bin/veil)
# Env: REPEAT (2), BUILD_DIR (build): its media and screenshots are used.
set -euo pipefail
cd "$(dirname "$0")/.."
a=$1 b=$2
build=${BUILD_DIR:-build}
out=out/whip-impair-compare
mkdir -p "$out"
for i in $(seq 1 "${REPEAT:-2}"); do
  for v in "$a" "$b"; do
    log="$out/$(basename "$(dirname "$v")")-$(basename "$v")-$i.log"
    rc=0
    VEIL_BIN=$(realpath "$v") VEIL_TEST_MEDIA=$(realpath "$build/media") VEIL_SCREENSHOTS=$(realpath "$build/screenshots") \
      VEIL_ASSETS=${VEIL_ASSETS:-$(realpath ../shared/assets)} VEIL_SOURCE_DIR=$(pwd) \
      node tests/web/whip_client.test.mjs > "$log" 2>&1 || rc=$?
    echo "== $v, run $i: rc $rc ($log)"
    grep -E "figure: (machine speed|8 s before|15 s impaired|[0-9]+ s after)|FAIL" "$log" || true
  done
done
