#!/usr/bin/python3
"""Strips of output frames next to the lossless master, to look at the masks.

usage: privacy-strip.py CLIP_DIR OUTPUT [OUTPUT ...] --frames 5,95,185 -o strip.png

CLIP_DIR is a leakcheck clip (master.mkv, gt.csv: ../shared/tools/leakcheck).
Each row is one frame: the master with its true face boxes in green, then each
OUTPUT (any video veil or another anonymizer wrote from the clip's input.ivf,
same frame count), labelled with its file name. Frames are read by index.
Writes a PNG (binary media: keep it out of git, e.g. under build/).
"""
import argparse
import csv
import os
import sys

import cv2
import numpy as np


def read_frames(path, wanted):
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        sys.exit(f"privacy-strip: cannot open {path}")
    out, i, last = {}, 0, max(wanted)
    while i <= last:
        ok, img = cap.read()
        if not ok:
            sys.exit(f"privacy-strip: {path} ends at frame {i}, before frame {last}")
        if i in wanted:
            out[i] = img
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("clip")
    ap.add_argument("outputs", nargs="+")
    ap.add_argument("--frames", default="15,105,195,285")
    ap.add_argument("--width", type=int, default=400, help="width of each tile, px")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    try:
        wanted = sorted({int(v) for v in a.frames.split(",")})
    except ValueError:
        sys.exit("privacy-strip: --frames takes comma-separated frame numbers")
    if not wanted or wanted[0] < 0 or not 64 <= a.width <= 1280:
        sys.exit("privacy-strip: frames must be >= 0 and --width in [64, 1280]")
    boxes = {}
    with open(os.path.join(a.clip, "gt.csv")) as f:
        for r in csv.DictReader(f):
            boxes.setdefault(int(r["frame"]), []).append([float(r[k]) for k in ("x", "y", "w", "h")])
    columns = [("master + true faces", read_frames(os.path.join(a.clip, "master.mkv"), set(wanted)))]
    columns += [(os.path.basename(p), read_frames(p, set(wanted))) for p in a.outputs]
    rows = []
    for fr in wanted:
        tiles = []
        for ci, (label, frames) in enumerate(columns):
            img = frames[fr].copy()
            if ci == 0:
                for x, y, w, h in boxes.get(fr, []):
                    cv2.rectangle(img, (int(x), int(y)), (int(x + w), int(y + h)), (0, 255, 0), 2)
            s = a.width / img.shape[1]
            img = cv2.resize(img, (a.width, int(round(img.shape[0] * s))), interpolation=cv2.INTER_AREA)
            cv2.putText(img, f"{label}  #{fr}", (6, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 3)
            cv2.putText(img, f"{label}  #{fr}", (6, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1)
            tiles.append(img)
        rows.append(np.hstack(tiles))
    if not cv2.imwrite(a.out, np.vstack(rows)):
        sys.exit(f"privacy-strip: cannot write {a.out}")
    print(f"privacy-strip: {len(wanted)} frames x {len(columns)} columns -> {a.out}")


if __name__ == "__main__":
    main()
