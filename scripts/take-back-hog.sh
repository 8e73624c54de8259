#!/usr/bin/env bash
# Sessions that grow calm together, with shed levels taken back by each session's own latency
# (server.shed_take_back_in_budget=false, the default) and within the node's budget (true),
# alternating, ${REPEAT:-2} runs of each: ${SESSIONS:-4} anonymized VP8 sessions from `veil load`
# for ${STAGE_SECONDS:-75} s, one `veil bench` process (one core) from ${HOG_FROM:-15} s to
# ${HOG_TO:-27} s, so that every session sheds at once and grows calm at once when the hog
# leaves. /metrics is read each second; per run it prints, before, during and after the hog,
# the frames over the 33.3-ms mark (processing latency, all sessions), the stale drops, the mean
# shed level, the levels shed again after the hog left, and the take-backs held. Results in
# ${OUT:-out/take-back-hog}. docs/capacity.md, "Taking levels back within the node's budget".
source "$(dirname "$0")/serve-lib.sh"
out=${OUT:-out/take-back-hog}
mkdir -p "$out"
n=${SESSIONS:-4} secs=${STAGE_SECONDS:-75} hog_from=${HOG_FROM:-15} hog_to=${HOG_TO:-27}
hog=
trap '[ -z "$hog" ] || kill "$hog" 2> /dev/null; kill ${server:-} 2> /dev/null || true' EXIT
keep='^veil_session_(processing_seconds_(bucket\{[^}]*le="0.0333"\}|count)|shed_level|stale_drops_total)|^veil_(shed_take_backs_held_total|process_cpu_percent) '
{
echo "| run | before the hog | with the hog | after it | take-backs held |"
echo "|---|---|---|---|---|"
for r in $(seq 1 "${REPEAT:-2}"); do
  for cfg in own-latency in-budget; do
    v=false
    [ "$cfg" = in-budget ] && v=true
    run="$out/$cfg-$r"
    mkdir -p "$run"
    veil_serve "$run/serve" -- --max-sessions 32 --mode anonymize --set "server.shed_take_back_in_budget=$v"
    "$veil" load --server "$url" -i "$media/sample_720p30.ivf" --stages "$n" --stage-seconds "$secs" --warmup 0 \
      --label "$cfg" --out "$run/load" > "$run/load.log" 2>&1 &
    load=$!
    : > "$run/metrics.txt"
    for s in $(seq 1 "$secs"); do
      sleep 1
      [ "$s" = "$hog_from" ] && { "$veil" bench "$media/sample_720p30.ivf" --repeat 100 > /dev/null 2>&1 & hog=$!; }
      [ "$s" = "$hog_to" ] && { kill "$hog" 2> /dev/null || true; hog=; }
      { echo "# t $s"; curl -s "$url/metrics" | grep -E "$keep" || true; } >> "$run/metrics.txt"
    done
    wait "$load" || true
    kill -TERM "$server"
    wait "$server" || true
    server=
    python3 - "$run/metrics.txt" "$cfg" "$r" "$hog_from" "$hog_to" << 'EOF'
import re, sys
path, cfg, run, hog_from, hog_to = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
snaps, t = {}, None
for line in open(path):
    if line.startswith("# t "):
        t = int(line.split()[2]); snaps[t] = {}
    elif t is not None and line.strip():
        name, value = line.rsplit(" ", 1)
        snaps[t][name] = float(value)
def total(snap, pattern, other):  # over the series in both readings (a session ended is not)
    return sum(v for k, v in snap.items() if k in other and re.match(pattern, k))
def levels(snap):
    return [v for k, v in snap.items() if k.startswith("veil_session_shed_level")]
ts = sorted(snaps)
rows = []
for a, b in zip(ts, ts[1:]):
    sa, sb = snaps[a], snaps[b]
    late = (total(sb, r"veil_session_processing_seconds_count", sa) - total(sb, r"veil_session_processing_seconds_bucket", sa)) \
         - (total(sa, r"veil_session_processing_seconds_count", sb) - total(sa, r"veil_session_processing_seconds_bucket", sb))
    stale = total(sb, r"veil_session_stale_drops_total", sa) - total(sa, r"veil_session_stale_drops_total", sb)
    ups = sum(1 for k, v in sb.items() if k.startswith("veil_session_shed_level") and v > sa.get(k, v))
    lv = levels(sb)
    if lv: rows.append((b, late, stale, sum(lv) / len(lv), ups, sb.get("veil_process_cpu_percent", 0)))
def part(lo, hi):
    sel = [x for x in rows if lo <= x[0] < hi]
    if not sel: return "-"
    return "%d late, %d stale, level %.2f, %d re-shed, CPU %.0f%%" % (
        sum(x[1] for x in sel), sum(x[2] for x in sel), sum(x[3] for x in sel) / len(sel), sum(x[4] for x in sel),
        sum(x[5] for x in sel) / len(sel))
last = snaps[ts[-1]]
print("| %s %s | %s | %s | %s | %d |" % (cfg, run, part(3, hog_from), part(hog_from, hog_to + 1),
      part(hog_to + 2, 10 ** 9), last.get("veil_shed_take_backs_held_total", 0)))
with open(path.replace("metrics.txt", "seconds.txt"), "w") as f:
    for x in rows: f.write("%d %d %d %.2f %d %.0f\n" % x)
EOF
  done
done
} | tee "$out/summary.md"
