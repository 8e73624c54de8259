#!/usr/bin/env bash
# Encoder threads (encoder.threads 1, the default, against 2) measured live in one run: whether a
# frame encoded on two threads shortens the p99 of anonymized sessions more than the threads'
# overhead costs. veil load --compare, alternating, --repeat 3. Out: out/enc-threads/compare.
# Env: SESSIONS (2,3), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
compare_servers out/enc-threads one two '[encoder]\nthreads = 1\n' '[encoder]\nthreads = 2\n' \
  --stages "${SESSIONS:-2,3}" --mode anonymize
