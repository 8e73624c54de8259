#!/usr/bin/env python3
"""Where leakcheck's over-blur comes from, frame by frame (issue 14).

Runs leakcheck's own over-blur measure (../shared/tools/leakcheck/score.py) on every STEP-th
frame of an anonymizer's output and splits the mean by what the clip's ground truth says is in
the frame: no annotated face, and the size of the largest one. leakcheck keeps a face only when
90% of it lies inside the frame, so a close-up that cuts a face at the frame's edge has no
annotated face at all, and hiding that face counts as over-blur.

Usage: scripts/overblur-frames.py CLIP_DIR OUTPUT_VIDEO [--step 4] [--leakcheck DIR] [--json F]
"""
import argparse
import json
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("clip")
ap.add_argument("video")
ap.add_argument("--step", type=int, default=4)
ap.add_argument("--leakcheck", default=os.path.join(here, "..", "..", "shared", "tools", "leakcheck"))
ap.add_argument("--json", help="write the per-frame rows here")
a = ap.parse_args()
if a.step < 1:
    sys.exit("--step must be >= 1")
sys.path.insert(0, a.leakcheck)
from common import load_gt, read_frames  # noqa: E402  (leakcheck's own)
from score import overblur  # noqa: E402

gt = load_gt(a.clip)
rows = []
for f, (m, p) in enumerate(zip(read_frames(os.path.join(a.clip, "master.mkv")), read_frames(a.video))):
    if f % a.step:
        continue
    boxes = gt.get(f, [])
    rows.append((f, overblur(m, p, boxes), len(boxes), max([min(b[2], b[3]) for b in boxes], default=0)))
if not rows:
    sys.exit("no frames read")
r = np.array(rows, dtype=float)
f, ob, n, big = r.T
print(f"{len(r)} frames judged (every {a.step}th): over-blur mean {ob.mean():.3f}")
for name, sel in [("no annotated face", n == 0), ("largest face < 100 px", (n > 0) & (big < 100)),
                  ("largest face 100-199 px", (big >= 100) & (big < 200)), ("largest face >= 200 px", big >= 200)]:
    if sel.any():
        print(f"  {name:26s} {int(sel.sum()):5d} frames, over-blur mean {ob[sel].mean():.3f}, "
              f"{ob[sel].sum() / max(ob.sum(), 1e-9):.0%} of the total")
print(f"  over frames with an annotated face: {ob[n > 0].mean():.3f}")
if a.json:
    with open(a.json, "w") as fh:
        json.dump(rows, fh)
