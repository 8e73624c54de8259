#!/usr/bin/env bash
# The trimmed detection window as a load-shedding level (server.shed_trim, issue 12 item 5)
# measured live in one run: veil load --compare with the same overload of anonymized sessions on
# a server whose levels go encoder steps -> cadence (shed_trim = false) and on one with the
# trimmed window between them (the default), alternating, --repeat 3.
# Out: out/shed-trim/compare (compare.md, load.json).
# Env: SESSIONS (5,6), STAGE_SECONDS (20), WARMUP (8), REPEAT (3), BUILD_DIR (build).
source "$(dirname "$0")/serve-lib.sh"
compare_servers out/shed-trim notrim trim 'shed_trim = false\n' 'shed_trim = true\n' \
  --stages "${SESSIONS:-5,6}" --mode anonymize
