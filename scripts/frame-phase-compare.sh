#!/usr/bin/env bash
# How much the sessions' frame phases to one another decide a node's latency: the same server
# configuration measured with every session's frames arriving at the same instants (A, the
# worst case: on 2 cores with 4 sessions, two frames wait a whole frame's work) and with the
# sessions' frames spread evenly over a frame interval (B, the best case), alternating,
# `veil load --compare same.toml same.toml --frame-phase A --frame-phase-b B`. Independent
# publishers have independent clocks, so a real node sees phases anywhere between, drifting;
# `veil load`'s default (drift) runs each stage through all of them (created: where the
# session-creation calls put them, as before 2026-12-05).
# Out: out/frame-phase/compare (compare.md, load.json).
# Env: TOML (server config text, e.g. '[server]\nshed = false\n'; none by default), SESSIONS (4), MODE (anonymize), A (aligned), B (spread), STAGE_SECONDS (20), WARMUP (5),
#      REPEAT (3), BUILD_DIR (build), VEIL_BIN.
source "$(dirname "$0")/serve-lib.sh"
a=${A:-aligned} b=${B:-spread}
WARMUP=${WARMUP:-5} compare_servers out/frame-phase same same "${TOML:-}" "${TOML:-}" --stages "${SESSIONS:-4}" \
  --mode "${MODE:-anonymize}" --frame-phase "$a" --frame-phase-b "$b"
