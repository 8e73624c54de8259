#!/usr/bin/env bash
# Builds veil and its tests with clang-14 under ASan+UBSan and runs the unit tests and the
# integration tests that do not need real-time pacing, paced_session_test among them (realtime
# ones cannot keep time under a sanitizer on 2 cores). Uses the fuzz build directory, so the
# libraries the fuzz targets already compiled are reused. Run after scripts/test.sh (it borrows that build's test media).
# Usage: scripts/sanitize.sh [ctest args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export VEIL_ASSETS=${VEIL_ASSETS:-$root/../shared/assets}
build=${FUZZ_BUILD_DIR:-build-fuzz}
# -O1 and line tables only: what ASan recommends, symbolized stacks, and a third less build time
# than -O2 -g on 2 cores (fuzz.sh and sanitize.sh share this build directory and its flags).
SAN_FLAGS="-O1 -gline-tables-only -DNDEBUG"
media=${BUILD_DIR:-build}/media
mkdir -p "$build"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$SAN_FLAGS" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$SAN_FLAGS" \
  -DVEIL_SANITIZE=address -DVEIL_FUZZ=ON -DVEIL_BUILD_TESTS=ON -DVEIL_BUILD_BENCH=OFF \
  -DVEIL_ASSETS="$VEIL_ASSETS" > "$build/configure-tests.log"
# cli_test is left out for CI time (90 s under ASan on 2 cores); `ctest --preset asan` runs it.
tests=(core_test vision_test detector_test privacy_test eval_unit_test server_unit_test http_test config_test
  inference_test fanout_test transport_test media_test hardening_test worker_protocol_test paced_session_test cluster_test)
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target veil "${tests[@]}"
if [ -d "$media" ] && [ ! -e "$build/media" ]; then ln -s "$(cd "$media" && pwd)" "$build/media"; fi
[ -d "$build/media" ] || { echo "sanitize: no test media: run scripts/test.sh first" >&2; exit 2; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0:detect_stack_use_after_return=0
export LSAN_OPTIONS=suppressions=$root/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$build"
regex=$(IFS='|'; echo "^(${tests[*]})\$")
# The media fixture is the one scripts/test.sh made; not regenerated here.
ctest --output-on-failure -j "${JOBS:-$(nproc)}" -R "$regex" -FS media "$@"
