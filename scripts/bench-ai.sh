#!/usr/bin/env bash
# AI target benchmark (issue 5): detection frames/s and latency with 4
# concurrent sessions, at max batch 1, 2, 4 and 8, in-process vs one
# `veil worker` on loopback in both wire forms, plus the micro benchmark of
# mixed batch sizes (one network vs one per shape). Results: out/bench-ai/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export VEIL_ASSETS=${VEIL_ASSETS:-$root/../shared/assets}
build=${BUILD_DIR:-build}
./scripts/install-deps.sh > /dev/null
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVEIL_ASSETS="$VEIL_ASSETS" > /dev/null
cmake --build "$build" --target veil veil_bench_micro > /dev/null
./scripts/make-test-media.sh "$build/media"
mkdir -p out/bench-ai
"$build/bin/veil" bench-ai --input "$build/media/sample_720p30.ivf" --sessions 4 --batches 1,2,4,8 \
  --seconds "${SECONDS_PER_RUN:-8}" --targets local,worker --forms u8,fp32 --json out/bench-ai/bench-ai.json \
  | tee out/bench-ai/bench-ai.md
"$build/bin/veil_bench_micro" --benchmark_filter=YuNetMixedBatches | tee -a out/bench-ai/bench-ai.md
