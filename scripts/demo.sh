#!/usr/bin/env bash
# The main job on sample media: installs the Debian packages, builds veil,
# generates a 720p30 VP8 clip from the shared CC BY video, and anonymizes it
# with the embedded default detector (YuNet 2023mar). Output: out/demo_anonymized.webm
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export VEIL_ASSETS=${VEIL_ASSETS:-$root/../shared/assets}
build=${BUILD_DIR:-build}
./scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVEIL_ASSETS="$VEIL_ASSETS" > /dev/null
cmake --build "$build" -j "$(nproc)"
./scripts/make-test-media.sh "$build/media"
mkdir -p out
# Point model lookup at an empty folder so the embedded detector is the one used.
VEIL_MODEL_DIR=/nonexistent VEIL_ASSETS=/nonexistent \
  "$build/bin/veil" anonymize "$build/media/sample_720p30.ivf" -o out/demo_anonymized.webm "$@"
echo "demo: wrote out/demo_anonymized.webm (open it with ffplay, VLC or a browser)"
