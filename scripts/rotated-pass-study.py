#!/usr/bin/python3
"""Would YuNet on the frame turned 90 degrees find the faces the upright pass misses?

YuNet is trained on upright faces; a face lying sideways (leakcheck's face 1093 at seed 1, a
crash victim on a road) scores low or not at all. Before building a rotated pass into veil, this
study asks on a leakcheck clip, whose faces are known (gt.csv), so no detector is the judge:

  1. every --step-th frame of the clip's lossless master is written upright, turned clockwise
     and turned counter-clockwise;
  2. `veil detect` (veil's own YuNet, the default model) runs on each at the live detection size
     (640x360, or 360x640 turned) down to score 0.1, and each box is turned back;
  3. a box is on a face when its IoU with a gt.csv box is >= 0.3, else a stray.

Printed: faces and strays per pass at scores 0.15 / 0.3 / 0.5 / 0.7; the face-frames (min side
>= 40 px, leakcheck's scored faces) that the upright pass misses at veil's low score (0.15) and a
turned pass finds at 0.3 / 0.5 / 0.7; and, per face id in --faces, the best IoU and its score per
sampled frame and pass.

  scripts/rotated-pass-study.py CLIP_DIR VEIL_BINARY [--step 9] [--faces 795,1093] [--work DIR]
"""
import argparse
import collections
import csv
import json
import os
import subprocess
import tempfile

import cv2

from leakcheck_faces import iou  # scripts/: the same IoU as the other studies

PASSES = {"up": None, "cw": cv2.ROTATE_90_CLOCKWISE, "ccw": cv2.ROTATE_90_COUNTERCLOCKWISE}


def turn_back(name, x, y, w, h, W, H):
    """A box found on the turned frame, in the upright frame's coordinates (W x H)."""
    if name == "cw":  # turned clockwise: x' = H-1-y, y' = x
        return y, H - (x + w), h, w
    if name == "ccw":  # turned counter-clockwise: x' = y, y' = W-1-x
        return W - (y + h), x, h, w
    return x, y, w, h


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("clip")
    ap.add_argument("veil")
    ap.add_argument("--step", type=int, default=9)
    ap.add_argument("--faces", default="795,1093")
    ap.add_argument("--work", default="")
    a = ap.parse_args()
    gt = collections.defaultdict(list)
    for r in csv.DictReader(open(os.path.join(a.clip, "gt.csv"))):
        gt[int(r["frame"])].append((float(r["x"]), float(r["y"]), float(r["w"]), float(r["h"]), int(r["face"])))
    work = a.work or tempfile.mkdtemp(prefix="rotated-pass-")
    for p in PASSES:
        os.makedirs(os.path.join(work, p), exist_ok=True)
    cap = cv2.VideoCapture(os.path.join(a.clip, "master.mkv"))
    fi, W, H = -1, 0, 0
    while True:
        ok, f = cap.read()
        fi += 1
        if not ok:
            break
        if fi % a.step:
            continue
        H, W = f.shape[:2]
        for p, rot in PASSES.items():
            cv2.imwrite(os.path.join(work, p, "%06d.png" % fi), f if rot is None else cv2.rotate(f, rot))
    found = {}
    for p in PASSES:
        files = sorted(os.listdir(os.path.join(work, p)))
        size = "640x360" if p == "up" else "360x640"
        out = subprocess.run([a.veil, "detect", "--size", size, "--min-score", "0.1", "--json"]
                             + [os.path.join(work, p, n) for n in files], check=True, capture_output=True, text=True)
        per = {}
        for im in json.loads(out.stdout)["images"]:
            n = int(os.path.basename(im["path"])[:6])
            per[n] = [(turn_back(p, d["x"], d["y"], d["w"], d["h"], W, H), d["score"]) for d in im["faces"]]
        found[p] = per
    for p, per in found.items():
        c = collections.Counter()
        for n, boxes in per.items():
            for b, s in boxes:
                kind = "faces" if max([iou(b, g[:4]) for g in gt[n]] or [0]) >= 0.3 else "strays"
                for t in (0.15, 0.3, 0.5, 0.7):
                    c[(kind, t)] += s >= t
        print(f"{p:>4}: " + "  ".join(f"{k} >= {t}: {c[(k, t)]}" for k in ("faces", "strays") for t in (0.15, 0.3, 0.5, 0.7)))
    for t in (0.3, 0.5, 0.7):
        gain, total = collections.Counter(), 0
        for n in found["up"]:
            for g in gt[n]:
                if min(g[2], g[3]) < 40:
                    continue
                total += 1
                up = any(iou(b, g[:4]) >= 0.3 and s >= 0.15 for b, s in found["up"][n])
                turned = any(iou(b, g[:4]) >= 0.3 and s >= t for p in ("cw", "ccw") for b, s in found[p][n])
                gain[g[4]] += (not up) and turned
        print(f"missed upright at 0.15, found turned at >= {t}: {sum(gain.values())} of {total} face-frames "
              f"{dict((k, v) for k, v in gain.items() if v)}")
    for face in [int(x) for x in a.faces.split(",") if x]:
        for p, per in found.items():
            row = []
            for n in sorted(per):
                for g in gt[n]:
                    if g[4] == face:
                        best = max([(iou(b, g[:4]), s) for b, s in per[n]] or [(0.0, 0.0)])
                        row.append(f"{n}: IoU {best[0]:.2f} score {best[1]:.2f}" if best[0] > 0 else f"{n}: none")
            if row:
                print(f"face {face} {p}: " + "; ".join(row))


if __name__ == "__main__":
    main()
