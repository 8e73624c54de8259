#!/usr/bin/env bash
# The live VP8 speed ladder with static threshold steps (encoder.vp8_static_steps, the default)
# against cpu-used alone up to 16 (false), measured in one run:
#  1. veil bench --speed-steps for each ladder on three 720p30 clips: the load clip
#     (sample_720p30.ivf), leakcheck's moving photos (camera_leakcheck_720p30.y4m) and the webcam
#     clip of ../shared/assets/video scaled to 720p (made here, in out/static-steps), ROUNDS (2)
#     rounds, the two ladders alternating, in out/static-steps/steps-*.md;
#  2. veil load --compare old.toml new.toml --repeat 3: SESSIONS (5) anonymized sessions of the
#     load clip, load shedding on as by default (the ladder is what it walks), in
#     out/static-steps/compare.
# Env: SESSIONS (5), STAGE_SECONDS (25), WARMUP (8), ROUNDS (2), FRAMES (150), COMPARE (1; 0:
# the bench tables only), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
out=out/static-steps
mkdir -p "$out"
printf '[encoder]\nvp8_static_steps = false\n[server]\nmax_sessions = "32"\n' > "$out/old.toml"
printf '[encoder]\nvp8_static_steps = true\n[server]\nmax_sessions = "32"\n' > "$out/new.toml"
webcam=$out/webcam_720p30.y4m
[ -s "$webcam" ] || ffmpeg -loglevel error -y -i "$VEIL_ASSETS/video/asl_gestures_book.mkv" -t 5 \
  -vf "scale=1280:720:flags=bicubic,fps=30" -pix_fmt yuv420p "$webcam"
for clip in "$media/sample_720p30.ivf" "$media/camera_leakcheck_720p30.y4m" "$webcam"; do
  name=$(basename "${clip%.*}")
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for c in old new; do
      echo "## $name, $c ladder, round $r" | tee -a "$out/steps-$name.md"
      "$veil" bench --speed-steps "$clip" --max-frames "${FRAMES:-150}" --config "$out/$c.toml" | tee -a "$out/steps-$name.md"
    done
  done
done
[ "${COMPARE:-1}" = 0 ] || "$veil" load --compare "$out/old.toml" "$out/new.toml" --repeat 3 -i "$media/sample_720p30.ivf" \
  --stages "${SESSIONS:-5}" --stage-seconds "${STAGE_SECONDS:-25}" --warmup "${WARMUP:-8}" --mode anonymize \
  --out "$out/compare"
