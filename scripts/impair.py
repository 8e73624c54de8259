#!/usr/bin/env python3
"""RTP ingest over an impaired network: does the session live, recover, and leak no face?

  scripts/impair.py [--seconds 20] [--recovery 8] [--loss 5] [--jitter-ms 30] [--reorder 1]
                    [--compare] [--build build] [--out out/impair] [--check]

Runs a real `veil serve`, creates an RTP session, and sends the leakcheck clip (1280x720 VP8,
a keyframe every 2 s, looped) to it with ffmpeg's RTP muxer (a third-party publisher; plain RTP
has no feedback channel, so recovery is the publisher's next keyframe) through
tests/tools/udp_impair.py: --loss % independent loss, --jitter-ms uniform jitter on a 40 ms delay
without reordering, and --reorder % of datagrams held back so that later ones overtake them.
After --seconds the impairment stops and the run goes on for --recovery s. An RTP viewer records
what leaves. With --compare the same run is made first with a proxy that impairs nothing.

Reported per run: frames in and out per second, decode errors, fail-closed frames, the recovery
time (from the end of the impairment to the first second with the output at full rate, no decode
error and no fail-closed frame), and faces leaked, judged against ground truth with no detector:
--samples frames spread over the recording, each found in the clip and scored by
tests/tools/snapshot_faces.py (leakcheck's own criterion). Clear faces (frontal, unoccluded) must
not leak; turned or occluded ones that the detector misses leak without any impairment too
(issue 14), so the clean run is the reference for those.
--check fails the run when the session ended, no frame came through for a second of the
impaired phase, the output mean is under --min-fps, it did not recover, or a clear face leaked.
"""
import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
sys.dont_write_bytecode = True
from udp_impair import Impair  # noqa: E402

from soak import free_port  # noqa: E402  (scripts/, this script's folder)

CLIP_FRAMES = 360  # input.ivf: the clip's first 12 s


def call(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read().decode()
            return r.status, json.loads(text) if text.strip().startswith("{") else text
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def judge(recording, clip_dir, work, samples):
    n = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "csv=p=0", recording], capture_output=True, text=True)
    total = int((n.stdout.strip().split(",") or ["0"])[0] or 0)
    if total == 0:
        return {"frames": 0, "judged": 0, "leaked": 0, "judged_clear": 0, "leaked_clear": 0}
    picks = sorted({int(total * (k + 0.5) / samples) for k in range(samples)})
    pngs = os.path.join(work, os.path.basename(recording) + "-frames")
    os.makedirs(pngs, exist_ok=True)
    expr = "+".join(f"eq(n\\,{p})" for p in picks)
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", recording, "-vf", f"select={expr}", "-vsync", "0",
                    os.path.join(pngs, "f%03d.png")], check=True)
    images = sorted(os.path.join(pngs, x) for x in os.listdir(pngs))
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "tools", "snapshot_faces.py"), clip_dir,
                        "--frames", str(CLIP_FRAMES), *images], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("snapshot_faces.py failed: " + r.stderr[-2000:])
    clear = set()
    with open(os.path.join(clip_dir, "gt.csv")) as f:
        for row in csv.DictReader(f):
            if row["clear"] == "1":
                clear.add((int(row["frame"]), int(row["face"])))
    items = json.loads(r.stdout)["images"]
    leaks = [(i["image"], i["frame"], f["face"], f["ssim_half"]) for i in items for f in i["detail"] if f["leaked"]]
    return {
        "frames": total, "images": len(items),
        "judged": sum(i["faces"] for i in items), "leaked": len(leaks),
        "judged_clear": sum(1 for i in items for f in i["detail"] if (i["frame"], f["face"]) in clear),
        "leaked_clear": sum(1 for _, fr, face, _ in leaks if (fr, face) in clear),
        "leaks": [{"image": os.path.basename(im), "frame": fr, "face": face, "ssim_half": s} for im, fr, face, s in leaks],
    }


def one_run(a, veil, base, name, impaired, work):
    clip_dir = os.path.join(a.build, "media", "leakcheck")
    st, s = call(base, "POST", "/v1/sessions", {"id": name, "codec": "vp8"})
    if st != 201:
        raise RuntimeError(f"cannot create the session: {st} {s}")
    port = s["ingest"]["video_port"]
    proxy = Impair(("127.0.0.1", 0), ("127.0.0.1", port), *((a.loss, a.jitter_ms, a.reorder, 40.0) if impaired else (0, 0, 0, 40.0)),
                   seed=a.seed)
    rec = os.path.join(work, name + ".ivf")
    total = a.seconds + a.recovery
    viewer = subprocess.Popen([veil, "view", "--server", base, "--session", name, "--record", rec, "--seconds",
                               str(total + 3), "--idle-exit", str(total)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    pub = subprocess.Popen(["ffmpeg", "-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i",
                            os.path.join(clip_dir, "input.ivf"), "-t", str(total), "-an", "-c:v", "copy", "-f", "rtp",
                            "-payload_type", "96", f"rtp://127.0.0.1:{proxy.port}?pkt_size=1200"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    per_s, prev, ended, last_stats = [], None, False, {}
    for sec in range(1, total + 1):
        time.sleep(max(0.0, t0 + sec - time.monotonic()))
        if impaired and sec == a.seconds:
            proxy.loss = proxy.jitter = proxy.reorder = 0.0  # the network is fine again
        st, x = call(base, "GET", f"/v1/sessions/{name}/stats")
        if st != 200:
            ended = True
            break
        cur = {"in": x["frames_received"], "out": x["frames_sent"], "decode_errors": x["decode_errors"],
               "fail_closed": x["fail_closed_frames"]}
        if prev is not None:
            per_s.append({"t": sec, **{k: cur[k] - prev[k] for k in cur}})
        prev = cur
        last_stats = x
    pub.wait(timeout=30)
    viewer.wait(timeout=30)
    proxy.close()
    events = [e for e in call(base, "GET", "/v1/events")[1]["events"] if e["session"] == name]
    call(base, "DELETE", f"/v1/sessions/{name}")
    imp = [p for p in per_s if p["t"] <= a.seconds and p["t"] > 2]  # after the start-up seconds
    rec_s = [p for p in per_s if p["t"] > a.seconds]
    recovery = None
    for p in rec_s:
        if p["out"] >= 28 and p["decode_errors"] == 0 and p["fail_closed"] == 0:
            recovery = p["t"] - a.seconds
            break
    out = {
        "run": name, "impaired": impaired, "proxy": dict(proxy.counts), "ended_early": ended,
        "session_errors": [e["detail"] for e in events if e["type"] == "session_error"],
        "impaired_phase": {
            "seconds": len(imp),
            "fps_in_mean": round(sum(p["in"] for p in imp) / max(1, len(imp)), 1),
            "fps_out_mean": round(sum(p["out"] for p in imp) / max(1, len(imp)), 1),
            "fps_out_min": min((p["out"] for p in imp), default=0),
            "decode_errors": sum(p["decode_errors"] for p in imp),
            "fail_closed": sum(p["fail_closed"] for p in imp),
            "frames_out": sum(p["out"] for p in imp),
        },
        "recovery_s": recovery,
        "rtp": last_stats.get("rtp"), "publisher": last_stats.get("publisher"),
        "per_second": per_s,
    }
    if os.path.exists(rec) and os.path.getsize(rec) > 32:
        out["faces"] = judge(rec, clip_dir, work, a.samples)
        if out["faces"]["leaked"]:
            keep = os.path.join(a.out, "leaks-" + name)
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(os.path.join(work, name + ".ivf-frames"), keep)
    else:
        out["faces"] = {"frames": 0, "judged": 0, "leaked": 0, "judged_clear": 0, "leaked_clear": 0}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=20, help="impaired phase")
    ap.add_argument("--recovery", type=int, default=8, help="unimpaired phase after it")
    ap.add_argument("--loss", type=float, default=5.0)
    ap.add_argument("--jitter-ms", type=float, default=30.0)
    ap.add_argument("--reorder", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--samples", type=int, default=30, help="frames judged per recording")
    ap.add_argument("--min-fps", type=float, default=20, help="--check: output mean in the impaired phase")
    ap.add_argument("--compare", action="store_true", help="first the same run with no impairment")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "impair"))
    ap.add_argument("--veil", default=None)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    veil = a.veil or os.path.join(a.build, "bin", "veil")
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="veil-impair-")
    port = free_port()
    log = open(os.path.join(a.out, "serve.log"), "w")
    serve = subprocess.Popen([veil, "serve", "--listen", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            if call(base, "GET", "/healthz")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.1)
    else:
        sys.exit("impair: veil serve did not start (see serve.log)")
    runs = []
    try:
        if a.compare:
            runs.append(one_run(a, veil, base, "clean", False, work))
        runs.append(one_run(a, veil, base, "impaired", True, work))
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(a.out, "impair.json"), "w") as f:
        json.dump({"loss_pct": a.loss, "jitter_ms": a.jitter_ms, "reorder_pct": a.reorder, "runs": runs}, f, indent=1)
    for r in runs:
        ph, fc = r["impaired_phase"], r["faces"]
        print(f"impair: {r['run']}: proxy {json.dumps(r['proxy'])}; over {ph['seconds']} s: in {ph['fps_in_mean']} fps, "
              f"out {ph['fps_out_mean']} fps (min {ph['fps_out_min']}), decode errors {ph['decode_errors']}, "
              f"fail-closed {ph['fail_closed']} of {ph['frames_out']}; recovery {r['recovery_s']} s; "
              f"faces judged {fc['judged']} ({fc['judged_clear']} clear) in {fc.get('images', 0)} frames, "
              f"leaked {fc['leaked']} ({fc['leaked_clear']} clear)", flush=True)
    problems = []
    r = runs[-1]
    if r["ended_early"] or r["session_errors"]:
        problems.append(f"the session ended: {r['session_errors']}")
    if r["impaired_phase"]["fps_out_min"] == 0:
        problems.append("a second of the impaired phase without an output frame")
    if r["impaired_phase"]["fps_out_mean"] < a.min_fps:
        problems.append(f"output {r['impaired_phase']['fps_out_mean']} fps < {a.min_fps}")
    if r["recovery_s"] is None:
        problems.append("no full-rate clean second after the impairment ended")
    if r["faces"]["judged"] == 0:
        problems.append("no face was judged")
    if r["faces"]["leaked_clear"]:
        problems.append(f"{r['faces']['leaked_clear']} clear faces leaked")
    if a.check and problems:
        print("impair: FAILED: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)
    if problems:
        print("impair: problems: " + "; ".join(problems))


if __name__ == "__main__":
    main()
