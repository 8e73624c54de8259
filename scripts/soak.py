#!/usr/bin/env python3
"""Soak and churn for `veil serve`: does it come back to where it started, and does it leak faces?

  scripts/soak.py [--minutes 30] [--build build] [--out out/soak] [--check]

Runs a real `veil serve` with two AI targets (in-process and one `veil worker` over gRPC) and,
every --period seconds, starts a cycle on a new session (up to 3 overlap):
  - `veil publish` sends a clip as live RTP: the leakcheck clip at 1280x720, or the same clip
    switching to 640x360 at a keyframe halfway (a publisher changing resolution);
  - an RTP viewer (`veil view`) joins and records what it gets;
  - a WHEP viewer (tests/tools/whep_view.py: GStreamer webrtcbin, not veil's code) joins and
    records too; on even cycles it leaves 1 s after its first frame (DELETE) while the session
    goes on;
  - every 3rd cycle the publisher restarts: a new `veil publish --attach` process (new SSRC,
    new sequence and timestamp bases) carries on into the same session;
  - the session is deleted; the viewer leaves when its stream stops.
Every 10th cycle the worker is killed (SIGKILL) and started again 2 s later: its sessions move
to the in-process target and back.

Measured after every cycle: the server's RSS, threads and open fds (/proc), and each target's
active streams (/v1/targets). Once all cycles are done and the server is idle: fds, threads and
active streams must be back at (or below) the idle baseline taken after the warm-up cycles. RSS
growth after the warm-up is reported per 100 cycles two ways: idle baseline to idle end, and the
least-squares trend through every cycle's sample (the one --check holds to --max-rss-growth once
100 cycles follow the warm-up; also over the last 100 cycles alone).

Privacy against ground truth, no detector: every RTP recording is sampled (6 frames), every
WHEP one (3 frames), and judged by tests/tools/snapshot_faces.py (leakcheck's own criterion:
best-half SSIM of each annotated face of min side >= 48 px vs the lossless master); the frame
is found by search, so dropped or looped frames do not matter. Clear faces (leakcheck's frontal, unoccluded ones) must
not leak; turned or occluded faces that the detector misses leak without any churn too (issue
14), so they are reported. Leaked frames and their recording are kept in OUT/leaks/.

Writes OUT/soak.json (summary and per-cycle samples) and OUT/soak.csv. With --check, exits 1
when fds, threads or active streams did not return to the baseline, a clear face leaked, a cycle
got no frames, or RSS grew more than --max-rss-growth percent per 100 cycles after warm-up.
"""
import argparse
import csv
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def proc_stats(pid):
    st = {"rss_mb": None, "threads": None, "fds": None}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                st["rss_mb"] = round(int(line.split()[1]) / 1024, 1)
            elif line.startswith("Threads:"):
                st["threads"] = int(line.split()[1])
    st["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return st


class Api:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method, path, body=None, timeout=10):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
                return r.status, json.loads(text) if text.strip().startswith("{") else text
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)


def ivf_frames(path):
    with open(path, "rb") as f:
        data = f.read()
    hdr_len = struct.unpack("<H", data[6:8])[0]
    frames, pos = [], hdr_len
    while pos + 12 <= len(data):
        size, pts = struct.unpack("<IQ", data[pos:pos + 12])
        frames.append((pts, data[pos + 12:pos + 12 + size]))
        pos += 12 + size
    return data[:hdr_len], frames


def make_clips(media, out):
    """The leakcheck clip, and the same clip switching to 640x360 at frame 60 (a keyframe, 2 s in)."""
    big = os.path.join(media, "leakcheck", "input.ivf")
    small = os.path.join(out, "leakcheck_360.ivf")
    if not os.path.exists(small):
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", os.path.join(media, "leakcheck", "master.mkv"),
                        "-vf", "scale=640:360:flags=area", "-c:v", "libvpx", "-b:v", "800k", "-g", "60",
                        "-force_key_frames", "expr:eq(n,60)", small], check=True)
    mixed = os.path.join(out, "leakcheck_720_to_360.ivf")
    header, a = ivf_frames(big)
    _, b = ivf_frames(small)
    cut = 60
    frames = [f for f in a if f[0] < cut] + [f for f in b if f[0] >= cut]
    with open(mixed, "wb") as f:
        f.write(header[:24] + struct.pack("<I", len(frames)) + header[28:])
        for pts, payload in frames:
            f.write(struct.pack("<IQ", len(payload), pts) + payload)
    return big, mixed


def load_clear(clip_dir):
    """(frame, face) -> whether leakcheck marks the face clear (frontal, unoccluded)."""
    clear = {}
    with open(os.path.join(clip_dir, "gt.csv")) as f:
        for row in csv.DictReader(f):
            clear[(int(row["frame"]), int(row["face"]))] = row["clear"] == "1"
    return clear


def judge(recording, clip_dir, workdir, clear, samples=6):
    """Faces judged and leaked in `samples` frames spread over a recording (ground truth)."""
    pngs = os.path.join(workdir, os.path.basename(recording) + "-frames")
    os.makedirs(pngs, exist_ok=True)
    n = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "csv=p=0", recording], capture_output=True, text=True)
    try:
        total = int(n.stdout.strip().split(",")[0])
    except ValueError:
        return {"frames": 0, "judged": 0, "leaked": 0, "judged_clear": 0, "leaked_clear": 0}
    if total == 0:
        return {"frames": 0, "judged": 0, "leaked": 0, "judged_clear": 0, "leaked_clear": 0}
    picks = sorted({int(total * (k + 0.5) / samples) for k in range(samples)})
    expr = "+".join(f"eq(n\\,{p})" for p in picks)
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", recording, "-vf", f"select={expr}", "-vsync", "0",
                    os.path.join(pngs, "f%02d.png")], check=True)
    images = sorted(os.path.join(pngs, x) for x in os.listdir(pngs))
    # Every recording starts at the clip's start and lasts at most 6.5 s: the frame is searched for in
    # the clip's first 240 frames only.
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "tools", "snapshot_faces.py"), clip_dir,
                        "--frames", "240", *images], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("snapshot_faces.py failed: " + r.stderr[-2000:])
    items = json.loads(r.stdout)["images"]
    judged = sum(i["faces"] for i in items)
    leaked = sum(i["leaked"] for i in items)
    worst = max((f["ssim_half"] for i in items for f in i["detail"]), default=None)
    leaks = [{"image": os.path.basename(i["image"]), "frame": i["frame"], "face": f["face"], "ssim_half": f["ssim_half"],
              "clear": clear.get((i["frame"], f["face"]), False)} for i in items for f in i["detail"] if f["leaked"]]
    judged_clear = sum(1 for i in items for f in i["detail"] if clear.get((i["frame"], f["face"]), False))
    if leaks:  # keep the evidence
        keep = os.path.join(os.path.dirname(workdir.rstrip("/")), "leaks")
        os.makedirs(keep, exist_ok=True)
        for i in items:
            if i["leaked"]:
                shutil.copy(i["image"], os.path.join(keep, os.path.basename(recording) + "-" + os.path.basename(i["image"])))
        shutil.copy(recording, keep)
    shutil.rmtree(pngs, ignore_errors=True)
    return {"frames": total, "judged": judged, "leaked": leaked, "judged_clear": judged_clear,
            "leaked_clear": sum(1 for x in leaks if x["clear"]), "max_ssim": worst, "leaks": leaks, "picked": picks}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--period", type=float, default=4.0, help="a new cycle every this many seconds")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "soak"))
    ap.add_argument("--veil", default=None, help="the veil binary (default: BUILD/bin/veil), e.g. an ASan build")
    ap.add_argument("--warmup", type=int, default=10, help="cycles before the baseline")
    ap.add_argument("--max-rss-growth", type=float, default=1.0, help="percent per 100 cycles after warm-up (--check)")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    veil = a.veil or os.path.join(a.build, "bin", "veil")
    media = os.path.join(a.build, "media")
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="veil-soak-")
    clip_dir = os.path.join(media, "leakcheck")
    clear = load_clear(clip_dir)
    big, mixed = make_clips(media, a.out)

    sport, wport = free_port(), free_port()
    logs = {n: open(os.path.join(a.out, n + ".log"), "w") for n in ("serve", "worker", "clients")}

    def start_worker():
        return subprocess.Popen([veil, "worker", "--listen", f"127.0.0.1:{wport}"], stdout=logs["worker"],
                                stderr=subprocess.STDOUT)

    worker = start_worker()
    serve = subprocess.Popen([veil, "serve", "--listen", f"127.0.0.1:{sport}", "--targets",
                              f"local,127.0.0.1:{wport}", "--max-sessions", "6", "--start-timeout-ms", "8000",
                              "--publisher-timeout-ms", "3000"], stdout=logs["serve"], stderr=subprocess.STDOUT)
    api = Api(sport)
    for _ in range(100):
        if api.call("GET", "/healthz")[0] == 200:
            break
        time.sleep(0.1)
    else:
        sys.exit("soak: veil serve did not start (see serve.log)")
    server = f"http://127.0.0.1:{sport}"

    lock = threading.Lock()
    cycles = []  # per cycle: dict

    def run(cmd, timeout):
        with lock:
            logs["clients"].write("$ " + " ".join(cmd) + "\n")
            logs["clients"].flush()
        try:
            return subprocess.run(cmd, stdout=logs["clients"], stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return -1

    def cycle(i):
        sid = f"soak{i}"
        clip = mixed if i % 2 else big
        restart = i % 3 == 2
        rec = os.path.join(work, sid + ".ivf")
        c = {"cycle": i, "session": sid, "clip": os.path.basename(clip), "restart": restart}
        viewer = subprocess.Popen([veil, "view", "--server", server, "--session", sid, "--record", rec, "--wait", "5",
                                   "--idle-exit", "1.5", "--seconds", "12"], stdout=logs["clients"],
                                  stderr=subprocess.STDOUT)
        # A WHEP viewer (webrtcbin, not veil's code) joins once the session exists; on even cycles it
        # leaves 1 s after its first frame (DELETE) while the session goes on, on odd ones it stays
        # to the end.
        whep_rec = os.path.join(work, sid + "-whep.ivf")

        def whep_join():
            # Started with the cycle and retrying until the session exists (--wait): GStreamer's start
            # and ICE gathering overlap the publisher's. Started only once the session existed, a
            # viewer on a slow, busy machine was connected as the 4-s publish ended (first frames
            # 1.3-4.5 s after its start, and once none).
            try:
                r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests", "tools", "whep_view.py"),
                                    f"{server}/whep/{sid}", "--wait", "8", "--record", whep_rec, "--idle-exit", "1.5",
                                    "--seconds", "14",
                                    "--leave-after", "1" if i % 2 == 0 else "0"], stdout=subprocess.PIPE,
                                   stderr=logs["clients"], text=True, timeout=30)
                c["whep"] = json.loads(r.stdout.strip().splitlines()[-1])
            except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
                c["whep"] = {"error": str(e)[:200], "frames": 0}

        whep = threading.Thread(target=whep_join)
        whep.start()
        c["publish_rc"] = run([veil, "publish", "--server", server, "-i", clip, "--session", sid, "--keep",
                               "--seconds", "2.5" if restart else "4"], 20)
        if restart:
            time.sleep(0.3)
            c["restart_rc"] = run([veil, "publish", "--server", server, "-i", clip, "--session", sid, "--attach",
                                   "--seconds", "2"], 20)
        st, body = api.call("GET", f"/v1/sessions/{sid}/stats")
        c["stats_status"] = st
        if st != 200:  # kept so that a cycle without frames says why
            c["stats_error"] = str(body)[:300]
        if st == 200:
            c["frames_in"] = body.get("frames_received")
            c["frames_out"] = body.get("frames_sent")
            c["fail_closed"] = body.get("fail_closed_frames")
            c["resolution_changes"] = body.get("resolution_changes")
            c["ssrc_changes"] = body.get("rtp", {}).get("ssrc_changes")
        c["delete"] = api.call("DELETE", f"/v1/sessions/{sid}")[0]
        try:
            viewer.wait(timeout=20)
        except subprocess.TimeoutExpired:
            viewer.kill()
            viewer.wait()
        whep.join()
        c["recorded"] = os.path.exists(rec) and os.path.getsize(rec) > 32
        if c["recorded"]:
            c.update({"judge_" + k: v for k, v in judge(rec, clip_dir, os.path.join(a.out, "work"), clear).items()})
            os.remove(rec)
        if os.path.exists(whep_rec) and os.path.getsize(whep_rec) > 32:
            j = judge(whep_rec, clip_dir, os.path.join(a.out, "work"), clear, samples=3)
            c.update({"whep_judge_" + k: j[k] for k in ("judged", "leaked", "judged_clear", "leaked_clear")})
            os.remove(whep_rec)
        with lock:
            cycles.append(c)

    samples = []

    def sample(i, phase):
        s = proc_stats(serve.pid)
        st, t = api.call("GET", "/v1/targets")
        s["active_streams"] = {x["name"]: x["active_streams"] for x in t["targets"]} if st == 200 else None
        st, l = api.call("GET", "/v1/sessions")
        s["sessions"] = len(l["sessions"]) if st == 200 else None
        s.update({"cycle": i, "phase": phase, "t_s": round(time.monotonic() - t0, 1)})
        samples.append(s)
        return s

    def wait_idle(timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st, l = api.call("GET", "/v1/sessions")
            if st == 200 and not l["sessions"]:
                break
            time.sleep(0.2)
        time.sleep(2.0)  # housekeeping ticks, viewer threads end, sockets close

    t0 = time.monotonic()
    end_at = t0 + a.minutes * 60
    threads, i, baseline = [], 0, None
    worker_kills = 0
    while time.monotonic() < end_at or i <= a.warmup:
        if i == a.warmup and baseline is None:  # the idle baseline after warm-up
            for th in threads:
                th.join()
            wait_idle()
            baseline = sample(i, "baseline")
            print(f"soak: baseline after {i} cycles: {json.dumps(baseline)}", flush=True)
        if i > 0 and i % 10 == 0:
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            worker_kills += 1
            time.sleep(2.0)
            worker = start_worker()
        threads = [th for th in threads if th.is_alive()]
        while len(threads) >= 3:
            time.sleep(0.2)
            threads = [th for th in threads if th.is_alive()]
        th = threading.Thread(target=cycle, args=(i,))
        th.start()
        threads.append(th)
        time.sleep(a.period)
        sample(i, "cycle")
        if i % 10 == 0:
            print(f"soak: cycle {i}: {json.dumps(samples[-1])}", flush=True)
        i += 1
    for th in threads:
        th.join()
    time.sleep(3.0)  # the worker restarted last has been probed up again
    wait_idle()
    final = sample(i, "final")

    serve.send_signal(signal.SIGTERM)
    try:
        rc = serve.wait(timeout=20)
    except subprocess.TimeoutExpired:
        serve.kill()
        rc = -9
    worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=20)
    shutil.rmtree(work, ignore_errors=True)

    cyc = sorted(cycles, key=lambda c: c["cycle"])
    after = [s for s in samples if s["phase"] == "cycle" and s["cycle"] >= a.warmup]
    n_after = len(cyc) - a.warmup
    rss_growth = None
    if baseline and n_after > 0:
        rss_growth = round((final["rss_mb"] - baseline["rss_mb"]) / baseline["rss_mb"] * 100 * 100 / n_after, 2)

    def slope_pct(pts):  # least-squares RSS slope, % of the mean per 100 cycles
        if len(pts) < 10:
            return None
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        b = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
        return round(b * 100 / my * 100, 2)

    pts = [(s["cycle"], s["rss_mb"]) for s in after]
    rss_slope = slope_pct(pts)
    rss_slope_last100 = slope_pct([p for p in pts if p[0] >= pts[-1][0] - 100]) if len(pts) >= 100 else None
    summary = {
        "minutes": a.minutes, "cycles": len(cyc), "worker_kills": worker_kills, "server_exit": rc,
        "baseline": baseline, "final": final,
        "rss_mb_min_max_after_warmup": [min(s["rss_mb"] for s in after), max(s["rss_mb"] for s in after)] if after else None,
        "rss_growth_pct_per_100_cycles": rss_growth,  # idle baseline -> idle end
        "rss_slope_pct_per_100_cycles": rss_slope,  # every cycle's sample after the warm-up
        "rss_slope_pct_per_100_cycles_last_100": rss_slope_last100,
        "cycles_without_frames": [c["cycle"] for c in cyc if not c.get("frames_out")],
        "restarts": sum(1 for c in cyc if c["restart"]),
        "restarts_followed": sum(1 for c in cyc if c["restart"] and (c.get("ssrc_changes") or 0) >= 1),
        "resolution_changes": sum(c.get("resolution_changes") or 0 for c in cyc),
        "whep_viewers": sum(1 for c in cyc if "whep" in c),
        "whep_viewers_with_frames": sum(1 for c in cyc if c.get("whep", {}).get("frames")),
        "whep_left_early": sum(1 for c in cyc if "whep" in c and c["cycle"] % 2 == 0),
        "faces_judged": sum(c.get("judge_judged", 0) + c.get("whep_judge_judged", 0) for c in cyc),
        "faces_leaked": sum(c.get("judge_leaked", 0) + c.get("whep_judge_leaked", 0) for c in cyc),
        "clear_faces_judged": sum(c.get("judge_judged_clear", 0) + c.get("whep_judge_judged_clear", 0) for c in cyc),
        "clear_faces_leaked": sum(c.get("judge_leaked_clear", 0) + c.get("whep_judge_leaked_clear", 0) for c in cyc),
        "max_face_ssim": max((c["judge_max_ssim"] for c in cyc if c.get("judge_max_ssim") is not None), default=None),
        "fail_closed_frames": sum(c.get("fail_closed") or 0 for c in cyc),
    }
    problems = []
    if baseline:
        for k in ("fds", "threads"):
            if final[k] > baseline[k]:
                problems.append(f"{k}: {baseline[k]} at the baseline, {final[k]} at the end")
        if any(final["active_streams"].values()):
            problems.append(f"active streams at the end: {final['active_streams']}")
    # Clear faces (frontal, unoccluded) must never show. Turned or occluded ones that veil's
    # detector misses also leak without any churn (issue 14 measures that): reported, not failed.
    if summary["clear_faces_leaked"]:
        problems.append(f"{summary['clear_faces_leaked']} clear faces leaked")
    if summary["faces_judged"] == 0:
        problems.append("no face was judged")
    if summary["whep_viewers_with_frames"] < summary["whep_viewers"]:
        problems.append(f"WHEP viewers without frames: {[c['cycle'] for c in cyc if not c.get('whep', {}).get('frames')]}")
    if summary["cycles_without_frames"]:
        why = {c["cycle"]: {k: c.get(k) for k in ("restart", "publish_rc", "restart_rc", "stats_status", "stats_error",
                                                    "frames_in", "frames_out", "fail_closed", "ssrc_changes", "delete")}
               for c in cyc if not c.get("frames_out")}
        problems.append(f"cycles with no frame out: {summary['cycles_without_frames']} ({json.dumps(why)}; "
                        "the server's and clients' logs are in OUT/serve.log, OUT/clients.log)")
    # Flat after warm-up: the trend through every cycle's sample (one idle pair of points is
    # noise-prone: the allocator's idle state differs by a few MB from one quiet moment to the next).
    if rss_slope is not None and n_after >= 100 and rss_slope > a.max_rss_growth:
        problems.append(f"RSS grew {rss_slope}% per 100 cycles after warm-up (trend through every cycle's sample)")
    if rc != 0:
        problems.append(f"veil serve exited {rc}")
    summary["problems"] = problems
    with open(os.path.join(a.out, "soak.json"), "w") as f:
        json.dump({"summary": summary, "cycles": cyc, "samples": samples}, f, indent=1)
    with open(os.path.join(a.out, "soak.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cycle", "phase", "t_s", "rss_mb", "threads", "fds", "sessions", "active_streams"])
        for s in samples:
            w.writerow([s["cycle"], s["phase"], s["t_s"], s["rss_mb"], s["threads"], s["fds"], s["sessions"],
                        json.dumps(s["active_streams"])])
    print("soak: " + json.dumps(summary))
    if a.check and problems:
        print("soak: FAILED: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
