#!/usr/bin/env bash
# Installs every Debian 12 package veil needs to build, test and run.
# Idempotent: packages already present are skipped by apt.
# VEIL_DEPS=build: only what building the veil binary needs (the container image's build
# stage, deploy/Dockerfile): no test, benchmark, browser, fuzzing or npm packages.
set -euo pipefail

BUILD_PKGS=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang-format
  # media: FFmpeg libraries (decode/encode/mux) and the ffmpeg CLI for test media generation
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg
  # the live VP8 encoder: libvpx itself (its speed can change between frames: src/media/vpx_encoder.cpp)
  libvpx-dev
  # transport: GStreamer (plain RTP; WebRTC WHIP/WHEP through webrtcbin with libnice)
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-tools gstreamer1.0-plugins-bad gstreamer1.0-nice libgstreamer-plugins-bad1.0-dev libnice-dev
  # inference: OpenCV 4.6 DNN (CPU) plus image codecs for evaluation
  libopencv-core-dev libopencv-dnn-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  # remote AI targets: gRPC (KServe v2 inference protocol) and protobuf
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # utilities
  # the control plane's HTTP server: Boost.Beast (header-only); cpp-httplib for HTTP clients
  libboost1.81-dev
  nlohmann-json3-dev libcpp-httplib-dev libspdlog-dev libfmt-dev libcli11-dev libssl-dev libtoml11-dev
  # cluster (issue 15): the node registry and session directory are Redis (src/cluster)
  libhiredis-dev
)
TEST_PKGS=(
  # tests and benchmarks; the browser tests of the web pages (headless chromium, node for playwright-core)
  libgtest-dev libgmock-dev libbenchmark-dev chromium nodejs
  # scripts/http-compare.sh: libmicrohttpd, measured against Beast and cpp-httplib (bench only)
  libmicrohttpd-dev
  # ground-truth privacy checks: ../shared/tools/leakcheck renders clips with known face boxes (Debian's python3)
  python3-opencv python3-numpy
  # tests/tools/whep_view.py: a WHEP viewer that is not veil's code (GStreamer webrtcbin from Python)
  python3-gi gir1.2-gst-plugins-bad-1.0 gir1.2-nice-0.1
  # fuzzing (scripts/fuzz.sh): clang with libFuzzer
  clang-14 libfuzzer-14-dev
  # promtool: the metrics test runs `promtool check metrics` on a live server's /metrics
  # (the package also holds the Prometheus server; nothing here starts it)
  prometheus
  # cluster tests run a real redis-server
  redis-server
)
PKGS=("${BUILD_PKGS[@]}")
[ "${VEIL_DEPS:-all}" = build ] || PKGS+=("${TEST_PKGS[@]}")

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "${VEIL_DEPS:-all}" = build ] && exit 0

# playwright-core (pinned in tests/web/package-lock.json) drives Debian's chromium in the web page tests.
# Debian's nodejs comes without npm (its own package); NodeSource's nodejs includes it and conflicts with it.
if ! command -v npm > /dev/null; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm
fi
web="$(cd "$(dirname "$0")/.." && pwd)/tests/web"
# The browser tests' packages, pinned in tests/web/package-lock.json (playwright-core; the Eyevinn
# WHIP web client and esbuild, which bundles it): installed again whenever the lock file changes.
want=$(sha256sum "$web/package-lock.json" | cut -d' ' -f1)
have=$(cat "$web/node_modules/.veil-lock.sha256" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  echo "install-deps: npm ci in tests/web ($(sed -n 's/.*"\(playwright-core\|@eyevinn\/whip-web-client\|esbuild\)": "\(.*\)".*/\1 \2/p' "$web/package.json" | tr '\n' ' '))"
  npm ci --prefix "$web" --no-audit --no-fund --loglevel=error
  echo "$want" > "$web/node_modules/.veil-lock.sha256"
fi
