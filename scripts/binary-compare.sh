#!/usr/bin/env bash
# A code change with no setting to switch it, measured live in one run: two veil binaries (the
# build before the change, copied aside, and the build after it) serve the same load in turn,
# A B A B ..., each a fresh server on loopback with its own `veil load` stage. Prints each
# figure's mean [min, max] per binary. Build the "before" binary with, for example:
#   git stash && cmake --build build --target veil && cp build/bin/veil /tmp/veil-old &&
#   git stash pop && cmake --build build --target veil
# Usage: scripts/binary-compare.sh OLD_VEIL NEW_VEIL
# Out: out/binary-compare/{old,new}-N/ (load.json each).
# Env: SESSIONS (2), STAGE_SECONDS (20), WARMUP (5), REPEAT (3), MODE (anonymize), BUILD_DIR (build),
# INPUT (the clip: $media/sample_720p30.ivf; e.g. $media/sample_720p30_h264.mkv for H.264).
source "$(dirname "$0")/serve-lib.sh"
old=$1 new=$2
out=out/binary-compare
rm -rf "$out" && mkdir -p "$out"
trap 'kill ${server:-} 2>/dev/null || true' EXIT
for rep in $(seq 1 "${REPEAT:-3}"); do
  for which in old new; do
    bin=$old; [ "$which" = new ] && bin=$new
    veil=$bin veil_serve "$out/$which-$rep-server" -- --max-sessions 32 --mode "${MODE:-anonymize}"
    "${BUILD_DIR:-build}/bin/veil" load --server "$url" -i "${INPUT:-$media/sample_720p30.ivf}" --stages "${SESSIONS:-2}" \
      --stage-seconds "${STAGE_SECONDS:-20}" --warmup "${WARMUP:-5}" --label "$which" --out "$out/$which-$rep" \
      > "$out/$which-$rep.log" 2>&1 || true
    kill -TERM "$server"; wait "$server" || true
  done
done
python3 - "$out" "${REPEAT:-3}" <<'PY'
import json, sys
out, reps = sys.argv[1], int(sys.argv[2])
def figures(path):
    st = [s for s in json.load(open(path))["runs"][0]["stages"] if "processing_ms" in s][0]
    f = {"server cpu ms/frame": st["server_cpu_ms_per_frame"], "processing p99 ms": st["processing_ms"]["p99"],
         "processing mean ms": st["processing_ms"]["mean"], "recv fps worst": st["received_fps_worst"],
         "fail-closed frames": st["fail_closed_frames"], "shed level mean": st["shed_level"]["mean"]}
    f.update({k + " ms/frame": v for k, v in st["stage_mean_ms"].items()})
    f.update({k + " p99 ms": v for k, v in st.get("stage_p99_ms", {}).items() if k in ("send", "encode", "queue_wait", "decode")})
    return f
runs = {w: [figures(f"{out}/{w}-{r}/load.json") for r in range(1, reps + 1)] for w in ("old", "new")}
print("| figure | old mean [range] | new mean [range] | ranges overlap |\n|---|---|---|---|")
for k in runs["old"][0]:
    a, b = [x[k] for x in runs["old"]], [x[k] for x in runs["new"]]
    overlap = not (max(a) < min(b) or max(b) < min(a))
    cell = lambda v: f"{sum(v)/len(v):.2f} [{min(v):.2f}, {max(v):.2f}]"
    print(f"| {k} | {cell(a)} | {cell(b)} | {'yes' if overlap else '**no**'} |")
PY
