#!/usr/bin/env python3
"""The over-blur that hiding every face in the picture costs on a leakcheck clip (issue 14).

leakcheck's ground truth (gt.csv) keeps a face only when it is valid in WIDER and at least 90% of
it lies inside the frame, and its over-blur counts every other pixel as background. A close-up
whose face runs off the frame's edge, or a face WIDER marks invalid, is still a face on the
screen that an anonymizer must hide, and hiding it counts as over-blur.

This script re-derives every face box of every frame from the clip's seed with leakcheck's own
camera path (make_clip.py: camera_path, map_box), without that filter, and reports:
  - floor: leakcheck's over-blur of an oracle that pixelates exactly every face box in the
    picture grown by 20% per side (the instrument's calibration: that reference leaks 0.02%),
    3 cells across a face, on the lossless master;
  - for each OUTPUT: leakcheck's over-blur as score.py computes it, and the same measure with
    every face in the picture left out ("outside every face").

Usage: scripts/overblur-floor.py CLIP_DIR FACES_DIR --seed N [OUTPUT ...] [--photos 24]
       [--seconds-per-photo 3] [--step 4] [--leakcheck DIR] [--json F]
The clip must have been made by make_clip.py with the same FACES_DIR, --seed, --photos and
--seconds-per-photo (the script checks that its filtered boxes reproduce gt.csv).
"""
import argparse
import json
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("clip")
ap.add_argument("faces")
ap.add_argument("videos", nargs="*")
sys.path.insert(0, here)
from leakcheck_faces import add_clip_args, check_clip_args, every_face  # noqa: E402

add_clip_args(ap, here)
a = ap.parse_intermixed_args()
check_clip_args(a)
from common import H, W, int_box, load_gt, pixelate, read_frames  # noqa: E402  (leakcheck's own)
from score import overblur  # noqa: E402

all_boxes = every_face(a.clip, a.faces, a.seed, a.photos, a.seconds_per_photo)
gt = load_gt(a.clip)


def clipped(boxes):
    out = []
    for x, y, w, h in boxes:
        x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, W), min(y + h, H)
        out.append((x0, y0, x1 - x0, y1 - y0))
    return out


def oracle(master, boxes):
    out = master.copy()
    for x, y, w, h in boxes:
        x0, y0, x1, y1 = int_box(x - 0.2 * w, y - 0.2 * h, 1.4 * w, 1.4 * h, out.shape)
        pixelate(out, x0, y0, x1, y1, max(8, round(w / 3)))
    return out


readers = [read_frames(v) for v in a.videos]
rows = []
for f, master in enumerate(read_frames(os.path.join(a.clip, "master.mkv"))):
    outs = [next(r, None) for r in readers]
    if f % a.step or f >= len(all_boxes):
        continue
    if any(o is None for o in outs):
        sys.exit(f"an output ends before frame {f}")
    boxes, every = gt.get(f, []), clipped(all_boxes[f])
    row = {"frame": f, "gt_faces": len(boxes), "faces_in_picture": len(every),
           "floor": overblur(master, oracle(master, all_boxes[f]), boxes)}
    for v, o in zip(a.videos, outs):
        row[v] = {"leakcheck": overblur(master, o, boxes), "outside_every_face": overblur(master, o, every)}
    rows.append(row)
if not rows:
    sys.exit("no frames read")

floor = np.array([r["floor"] for r in rows])
print(f"{len(rows)} frames judged (every {a.step}th); {sum(r['faces_in_picture'] > r['gt_faces'] for r in rows)} "
      f"show a face leakcheck's ground truth leaves out")
print(f"  floor (every face in the picture hidden, grown 20%):  over-blur mean {floor.mean():.3f}, "
      f"p90 {np.percentile(floor, 90):.3f}")
for v in a.videos:
    lc = np.array([r[v]["leakcheck"] for r in rows])
    ev = np.array([r[v]["outside_every_face"] for r in rows])
    print(f"  {v}: leakcheck over-blur mean {lc.mean():.3f} (p90 {np.percentile(lc, 90):.3f}); "
          f"outside every face {ev.mean():.3f} (p90 {np.percentile(ev, 90):.3f})")
if a.json:
    with open(a.json, "w") as fh:
        json.dump(rows, fh)
