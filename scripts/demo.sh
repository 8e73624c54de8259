#!/usr/bin/env bash
# The main job, live: installs the Debian packages, builds veil, generates
# sample media from the shared CC BY video, then runs the live relay on its
# embedded defaults (YuNet 2023mar compiled into the binary):
#   veil serve            the relay (HTTP API on loopback, RTP in/out)
#   veil publish          sends a 720p30 VP8 + Opus clip with faces as live RTP
#   veil view             subscribes as a viewer and records what arrives
# Output: out/demo/viewer.ivf (the anonymized stream as received: ffplay, VLC),
# out/demo/viewer.sdp (the viewer's SDP), out/demo/server.log, and the
# session's stats printed at the end. DEMO_SECONDS (default 12) sets the length.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export VEIL_ASSETS=${VEIL_ASSETS:-$root/../shared/assets}
build=${BUILD_DIR:-build}
seconds=${DEMO_SECONDS:-12}
./scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVEIL_ASSETS="$VEIL_ASSETS" > /dev/null
cmake --build "$build" -j "$(nproc)"
./scripts/make-test-media.sh "$build/media"
veil="$build/bin/veil"
mkdir -p out/demo
rm -f out/demo/viewer.ivf out/demo/viewer.sdp

# Model lookup points at nothing, so the embedded detector is the one used.
VEIL_MODEL_DIR=/nonexistent VEIL_ASSETS=/nonexistent \
  "$veil" serve --listen 127.0.0.1:0 "$@" > out/demo/server.out 2> out/demo/server.log &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 100); do
  url=$(sed -n 's/^veil serve: listening on //p' out/demo/server.out)
  [ -n "$url" ] && break
  kill -0 $server 2>/dev/null || { cat out/demo/server.log; echo "demo: the server did not start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "demo: the server did not start" >&2; exit 1; }
echo "demo: veil serve on $url (log: out/demo/server.log)"

"$veil" publish --server "$url" --input "$build/media/sample_opus.webm" --session demo \
  --seconds "$((seconds + 2))" > /dev/null &
publisher=$!
echo "demo: publishing $build/media/sample_opus.webm as live RTP to session 'demo' for ${seconds}s"
echo "demo: to watch live meanwhile: ffplay -protocol_whitelist file,udp,rtp -i out/demo/viewer.sdp"
"$veil" view --server "$url" --session demo --record out/demo/viewer.ivf --sdp out/demo/viewer.sdp \
  --seconds "$seconds" > out/demo/viewer.json
wait $publisher || true
kill -TERM $server
wait $server || true
trap - EXIT
grep -E "event|stopped" out/demo/server.log | sed 's/^/  /' || true
echo "demo: wrote out/demo/viewer.ivf (the anonymized stream as a viewer received it; ffplay or VLC opens it)"
