#!/usr/bin/env bash
# What a node's startup transcode timing holds (issue 12; docs/figures.md "what the startup
# timing holds"): scripts/timing-probe.cpp, built here against the build's static libraries into
# $BUILD_DIR/timing-probe, runs the server's own TimeTranscode ROUNDS times (3) as a process
# with glibc's default malloc and as `veil serve` runs it (mmap threshold fixed at 256 KiB,
# cli/service.cpp), then one freshly opened VP8 and H.264 codec pair frame by frame under the
# server's setting: which frames take the page faults, and what frames 1-12 (a timed pass) cost
# against frames 13-24. Needs a Release build in $BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
build=${BUILD_DIR:-build}
probe=$build/timing-probe
if [ ! -x "$probe" ] || [ scripts/timing-probe.cpp -nt "$probe" ] || [ "$build/src/libveil_server.a" -nt "$probe" ]; then
  # shellcheck disable=SC2046
  g++ -O2 -std=c++20 -pthread -DFMT_SHARED -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB \
    -Isrc -isystem /usr/include/opencv4 scripts/timing-probe.cpp -o "$probe" \
    "$build/src/libveil_server.a" "$build/src/libveil_media.a" "$build/src/libveil_core.a" \
    $(pkg-config --libs libavcodec libavformat libavutil libswscale vpx) -lopencv_imgproc -lopencv_core \
    -lfmt -lspdlog -lcrypto
fi
rounds=${ROUNDS:-3}
echo "== TimeTranscode, glibc's default malloc"
"$probe" timing "$rounds"
echo "== TimeTranscode, the mmap threshold fixed at 256 KiB (as veil serve)"
MMAP256=1 "$probe" timing "$rounds"
echo "== a fresh codec pair frame by frame (mmap threshold 256 KiB)"
MMAP256=1 "$probe" frames 30
MMAP256=1 H264=1 "$probe" frames 30
