#!/usr/bin/env bash
# The frame executor's threads (server.frame_threads) at the cores' count against one more, measured
# live in one run (issue 12: "latency is being lost to how the work is scheduled"): veil load
# --compare with the same anonymized sessions, alternating, --repeat 3. With as many executor
# threads as cores, a frame that waits behind two long ones waits even while the decode and
# inference threads leave a core idle for a moment; with one more, the kernel time-slices three.
# Read the processing p99 and the queue_wait stage.
# Out: out/frame-threads/compare (compare.md, load.json).
# Env: SESSIONS (4), A (2), B (3), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
a=${A:-2} b=${B:-3}
WARMUP=${WARMUP:-5} compare_servers out/frame-threads "threads$a" "threads$b" "frame_threads = $a\n" \
  "frame_threads = $b\n" --stages "${SESSIONS:-4}" --mode anonymize
