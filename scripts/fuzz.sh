#!/usr/bin/env bash
# Builds veil's libFuzzer targets (fuzz/) with clang-14 under ASan+UBSan into build-fuzz and
# runs each one for SECONDS (default 60) from its seed corpus (fuzz/corpus/<target>/; the
# tensor seeds are text protos encoded here with protoc). New inputs the fuzzer finds go to
# build-fuzz/corpus/<target>/. A crash stops the script (exit 1) with its input saved under
# build-fuzz/crashes/<target>/: fix it and keep the input in fuzz/corpus/<target>/ as a
# regression case. Usage: scripts/fuzz.sh [SECONDS] [offer|tensor|config|api|rtp|media ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export VEIL_ASSETS=${VEIL_ASSETS:-$root/../shared/assets}
secs=${1:-60}
shift || true
targets=${*:-offer tensor config api rtp media}
build=${FUZZ_BUILD_DIR:-build-fuzz}
# -O1 and line tables only: what ASan recommends, symbolized stacks, and a third less build time
# than -O2 -g on 2 cores (fuzz.sh and sanitize.sh share this build directory and its flags).
SAN_FLAGS="-O1 -gline-tables-only -DNDEBUG"
mkdir -p "$build"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$SAN_FLAGS" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$SAN_FLAGS" \
  -DVEIL_SANITIZE=address -DVEIL_FUZZ=ON -DVEIL_BUILD_TESTS=OFF -DVEIL_BUILD_BENCH=OFF \
  -DVEIL_ASSETS="$VEIL_ASSETS" > "$build/configure.log"
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)
proto=src/inference/proto
for t in $targets; do
  corpus="$build/corpus/$t" crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  seeds="fuzz/corpus/$t"
  if [ "$t" = tensor ]; then  # first byte: 0 request, 1 response, 2 metadata; then the message
    seeds="$build/seeds/tensor"
    mkdir -p "$seeds"
    for f in fuzz/corpus/tensor/*.textproto; do
      name=$(basename "$f" .textproto)
      case "$name" in
        request*) kind='\000' msg=inference.ModelInferRequest ;;
        response*) kind='\001' msg=inference.ModelInferResponse ;;
        *) kind='\002' msg=inference.ModelMetadataResponse ;;
      esac
      { printf "$kind"; protoc --proto_path="$proto" --encode="$msg" kserve_v2.proto < "$f"; } > "$seeds/$name.bin"
    done
  fi
  if [ "$t" = rtp ]; then  # real RTP from ffmpeg's packetizer (scripts/fuzz-rtp-seeds.py)
    seeds="$build/seeds/rtp"
    [ -f "$seeds/vp8.bin" ] || /usr/bin/python3 scripts/fuzz-rtp-seeds.py "$seeds" > /dev/null
  fi
  if [ "$t" = media ]; then  # small real files of every container and codec veil reads
    seeds="$build/seeds/media"
    if [ ! -f "$seeds/vp8.ivf" ]; then
      mkdir -p "$seeds"
      src=(-f lavfi -i testsrc2=size=64x48:rate=30)
      ffmpeg -loglevel error -y "${src[@]}" -frames:v 3 -c:v libvpx "$seeds/vp8.ivf"
      ffmpeg -loglevel error -y "${src[@]}" -frames:v 3 -c:v libx264 -profile:v baseline "$seeds/h264.mp4"
      ffmpeg -loglevel error -y "${src[@]}" -frames:v 2 -pix_fmt yuv420p "$seeds/raw.y4m"
      ffmpeg -loglevel error -y "${src[@]}" -f lavfi -i sine=frequency=440:duration=0.1 -frames:v 3 -c:v libvpx \
        -c:a libopus -shortest "$seeds/vp8-opus.webm"
    fi
  fi
  regress=""  # kept findings of targets whose seeds are generated
  if [ "$seeds" != "fuzz/corpus/$t" ] && [ -d "fuzz/corpus/$t" ]; then regress="fuzz/corpus/$t"; fi
  echo "fuzz: $t for ${secs}s"
  log="$build/fuzz-$t.log"
  set +e
  # Full malloc stacks, so lsan.supp's one entry (GLib's load-time block, under _dl_init) matches.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0 LSAN_OPTIONS=suppressions="$root/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/bin/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" "$seeds" $regress > "$log" 2>&1
  rc=$?
  set -e
  grep -E '^(Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb))' "$log" |
    sed "s/^/fuzz $t: /" || true
  if [ "$rc" -ne 0 ]; then
    grep -E -m1 -A40 'ERROR: |runtime error|deadly signal' "$log" | sed "s/^/fuzz $t: /" >&2 || tail -n 40 "$log" >&2
    echo "fuzz: $t found a crash (full log: $log): $(ls "$crashes")" >&2
    exit 1
  fi
done
echo "fuzz: no finding in $targets (${secs}s each)"
