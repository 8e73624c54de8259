#!/usr/bin/env bash
# A detection on the cadence ordered later than the frames on the frame executor
# (privacy.detect_slack_ms, issue 12), measured live in one run: veil load --compare with the
# same anonymized sessions on a server whose detections are due as frames handed over when they
# were asked for (slack 0) and on one whose detections on the cadence are due SLACK ms later
# (first frames, scene cuts and retries never are). Read the processing p99 and queue_wait
# against server CPU per frame, and the detect stage (submit to result) with the fail-closed
# frames: a detection answered later leaves older masks, grown for the frames since.
# Out: out/detect-slack/compare (compare.md, load.json).
# Env: SESSIONS (4,5), SLACK (33), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), BUILD_DIR (build),
# INPUT (the clip: build/media/sample_720p30_h264.mkv for H.264 sessions), LOAD_ARGS (more veil load flags).
source "$(dirname "$0")/serve-lib.sh"
WARMUP=${WARMUP:-5} compare_servers out/detect-slack slack-0 "slack-${SLACK:-33}" '[privacy]\ndetect_slack_ms = 0\n' \
  "[privacy]\ndetect_slack_ms = ${SLACK:-33}\n" --stages "${SESSIONS:-4,5}" --mode anonymize
