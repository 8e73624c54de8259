#!/usr/bin/env bash
# Generates the test and demo media from the CC BY clips in $VEIL_ASSETS/video
# (default ../shared/assets/video). Nothing generated here is committed.
# Usage: scripts/make-test-media.sh OUT_DIR
set -euo pipefail
out=${1:?usage: make-test-media.sh OUT_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
assets=${VEIL_ASSETS:-$here/../shared/assets}
video="$assets/video"
if [ ! -f "$video/tears_of_steel_actors_640x360.mp4" ]; then
  echo "make-test-media: assets not found: $video/tears_of_steel_actors_640x360.mp4" >&2
  echo "make-test-media: set VEIL_ASSETS to the folder holding models/, faces/ and video/" >&2
  exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
stamp="$out/.stamp-v12"
if [ -f "$stamp" ]; then exit 0; fi

tos="$video/tears_of_steel_actors_640x360.mp4"
asl="$video/asl_gestures_book.mkv"
# 720p30 VP8 IVF, 10 s: the main demo/bench input (faces 120-240 px after upscaling).
ff -i "$tos" -vf "scale=1280:720:flags=bicubic,fps=30" -c:v libvpx -b:v 2500k -deadline realtime -cpu-used -8 -threads 1 \
   -g 60 "$out/sample_720p30.ivf"
# 360p30 VP8 IVF, 9 s: many concurrent sessions on a small machine (AI failover test). It ends
# before the face that emerges from smoke at 9.3 s (a detection-cadence case, measured by the
# accuracy and server tests), so leaks counted there are the failover's alone.
ff -i "$tos" -t 9 -vf "fps=30" -c:v libvpx -b:v 800k -deadline realtime -cpu-used -8 -threads 1 -g 60 "$out/sample_360p30.ivf"
# Short 720p30 VP8 in WebM with an Opus track (audio pass-through).
ff -i "$tos" -f lavfi -i "sine=frequency=440:sample_rate=48000" -t 3 \
   -vf "scale=1280:720,fps=30" -c:v libvpx -b:v 2000k -deadline realtime -cpu-used -8 -threads 1 \
   -c:a libopus -b:a 64k -shortest "$out/sample_opus.webm"
# 720p30 H.264 (no B-frames, as a live encoder sends), 4 s: H.264 live sessions.
ff -i "$tos" -t 4 -vf "scale=1280:720:flags=bicubic,fps=30" -c:v libx264 -preset veryfast -tune zerolatency \
   -pix_fmt yuv420p -g 60 "$out/sample_720p30_h264.mkv"
# H.264 + AAC in MP4 and H.264 in MKV (from the webcam clip).
ff -i "$asl" -f lavfi -i "sine=frequency=660:sample_rate=48000" -t 3 -c:v libx264 -preset veryfast \
   -pix_fmt yuv420p -c:a aac -b:a 96k -shortest "$out/sample_h264_aac.mp4"
ff -i "$asl" -t 2 -c:v libx264 -preset veryfast -pix_fmt yuv420p "$out/sample_h264.mkv"
# The browser tests' fake camera (chromium --use-file-for-fake-video-capture): 1280x720 30 fps
# raw Y4M, 6 s (~250 MB, looped by the browser), faces in most frames. A frame code in the top-left
# corner (10 blocks of 16 px: white, black, then the frame number mod 256 in 8 bits, MSB first)
# lets the pages time each frame at the publisher's preview and at the viewer (glass-to-glass).
code="drawbox=x=0:y=0:w=160:h=16:color=black:t=fill,drawbox=x=0:y=0:w=16:h=16:color=white:t=fill"
for k in 7 6 5 4 3 2 1 0; do
  code="$code,drawbox=x=$(((9 - k) * 16)):y=0:w=16:h=16:color=white:t=fill:enable='eq(mod(floor(n/$((1 << k))),2),1)'"
done
ff -i "$tos" -t 6 -vf "scale=1280:720:flags=bicubic,fps=30,$code" -pix_fmt yuv420p "$out/camera_720p30.y4m"
# Y4M (raw), 1 s at 640x360.
ff -i "$tos" -t 1 -pix_fmt yuv420p "$out/sample.y4m"
# Damaged inputs: truncated, corrupted in the middle, random bytes, not video.
size=$(stat -c %s "$out/sample_720p30.ivf")
head -c $((size * 6 / 10)) "$out/sample_720p30.ivf" > "$out/truncated.ivf"
# corrupt.ivf: the VP8 frame tags of frames 150-152 overwritten with 0xff (a
# first-partition size larger than the frame): the decoder must reject them.
cp "$out/sample_720p30.ivf" "$out/corrupt.ivf"
u32le() { od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }
pos=32
for ((i = 0; i < 153; i++)); do
  fsize=$(u32le "$out/corrupt.ivf" "$pos")
  if [ "$i" -ge 150 ]; then
    printf '\xff\xff\xff\xff\xff\xff' | dd of="$out/corrupt.ivf" bs=1 seek=$((pos + 12)) conv=notrunc status=none
  fi
  pos=$((pos + 12 + fsize))
done
# garbage.mp4: 200 kB of compressed payload from the middle of a clip (high
# entropy, deterministic), no container.
dd if="$out/sample_720p30.ivf" of="$out/garbage.mp4" bs=1000 skip=100 count=200 status=none
echo "this is not a video" > "$out/not_video.ivf"
# Ground truth for privacy checks: a 12-s 720p30 clip rendered from 4 annotated photos by the
# independent instrument ../shared/tools/leakcheck (lossless master.mkv, exact per-frame face
# boxes gt.csv, VP8 input.ivf; a crowd with 40-83 px faces and three close-ups of 260-540 px).
leakcheck=${VEIL_LEAKCHECK:-$assets/../tools/leakcheck}
if [ ! -f "$leakcheck/make_clip.py" ]; then
  echo "make-test-media: the leakcheck tool is missing: $leakcheck/make_clip.py (set VEIL_LEAKCHECK)" >&2
  exit 1
fi
(cd "$leakcheck" && PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 make_clip.py "$assets/faces" "$out/leakcheck" --photos 4 --seconds-per-photo 3 --seed 1)
# make_clip.py encodes input.ivf with libvpx's realtime speed left to adapt (-cpu-used 8): the
# encoder lowers its quality whenever it runs behind, so the render followed the machine's load at
# that moment (a render made under load failed live_session_test's visibility bounds). Encode it
# again from the lossless master with the same settings at a fixed speed on one thread: the same
# bytes on every machine and under any load. Of the fixed speeds 4, 5, 6 and 8, speed 4 came
# closest to a render made on an idle machine (PSNR 46.8 dB against it; 31.55 dB against the master
# for both).
ff -i "$out/leakcheck/master.mkv" -c:v libvpx -deadline realtime -cpu-used -4 -threads 1 \
   -b:v 2500k -minrate 2500k -maxrate 2500k -bufsize 2500k -g 60 -lag-in-frames 0 -pix_fmt yuv420p \
   "$out/leakcheck/input.ivf"
# The same clip at 640x360 from the lossless master (area filter, as veil scales), for tests that
# run many sessions on a small machine (failover_test): its faces are gt.csv's boxes halved.
ff -i "$out/leakcheck/master.mkv" -vf "scale=640:360:flags=area" -c:v libvpx -b:v 800k -deadline realtime -cpu-used -8 \
   -threads 1 -g 60 "$out/leakcheck/input_360p.ivf"
# Its first 6 s (the crowd shot and a close-up) as 640x360 H.264 from a live encoder (no B-frames,
# 2 slices a picture as x264's sliced threads make on 2 cores): H.264 sessions judged by ground
# truth (server_test). 360p, so that an anonymized H.264 session, its bypass control and the
# judge fit a slow 2-core machine (at 720p they did not: frames were dropped for want of CPU).
ff -i "$out/leakcheck/master.mkv" -frames:v 180 -vf "scale=640:360:flags=area" -c:v libx264 -preset veryfast \
   -tune zerolatency -x264-params slices=2 -pix_fmt yuv420p -g 60 "$out/leakcheck/input_h264.mkv"
touch "$stamp"
echo "make-test-media: wrote $(ls "$out" | wc -l) files to $out"
