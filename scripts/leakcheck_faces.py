"""Every face in every frame of a leakcheck clip, including the ones its gt.csv leaves out.

leakcheck's make_clip.py keeps a face in gt.csv only when WIDER marks it valid and at least 90% of
it lies inside the frame. every_face() re-derives the layout from the clip's seed with
make_clip.py's own camera path (camera_path, map_box), without that filter, and checks that its
filtered boxes reproduce gt.csv. Used by overblur-floor.py and overblur-split.py.
"""
import csv
import os
import sys
from collections import defaultdict

import numpy as np


def iou(a, b):
    """Intersection over union of two (x, y, w, h) boxes."""
    ax0, ay0, aw, ah = a
    bx0, by0, bw, bh = b
    ix = max(0.0, min(ax0 + aw, bx0 + bw) - max(ax0, bx0))
    iy = max(0.0, min(ay0 + ah, by0 + bh) - max(ay0, by0))
    inter = ix * iy
    u = aw * ah + bw * bh - inter
    return inter / u if u > 0 else 0.0


def add_clip_args(ap, here):
    """The options every script over a leakcheck clip takes: how the clip was made, and where
    leakcheck lives."""
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--photos", type=int, default=24)
    ap.add_argument("--seconds-per-photo", type=float, default=3)
    ap.add_argument("--step", type=int, default=4)
    ap.add_argument("--leakcheck", default=os.path.join(here, "..", "..", "shared", "tools", "leakcheck"))
    ap.add_argument("--json", help="write the per-frame figures here")


def check_clip_args(a):
    if a.step < 1 or a.photos < 1 or a.seconds_per_photo <= 0:
        sys.exit("--step, --photos and --seconds-per-photo must be positive")
    import_leakcheck(a.leakcheck)


def import_leakcheck(path):
    """Puts leakcheck's directory on the import path (its common.py, make_clip.py, score.py)."""
    if not os.path.isfile(os.path.join(path, "make_clip.py")):
        sys.exit(f"leakcheck not found in {path} (--leakcheck DIR)")
    sys.path.insert(0, path)


def every_face(clip, faces_dir, seed, photos=24, seconds_per_photo=3.0):
    """Per frame, every face box (x, y, w, h; may reach past the frame) the photos' annotations
    put in the picture. Exits when the boxes make_clip.py would keep differ from clip/gt.csv."""
    import cv2
    from common import FPS, H, W, load_gt
    from make_clip import camera_path, map_box

    faces = defaultdict(list)
    with open(os.path.join(faces_dir, "ground_truth.csv")) as f:
        for r in csv.DictReader(f):
            faces[r["image"]].append(r)
    images = sorted(faces)
    picks = [images[i] for i in np.linspace(0, len(images) - 1, min(photos, len(images))).round().astype(int)]
    n = int(round(seconds_per_photo * FPS))
    all_boxes, kept = [], []
    for k, name in enumerate(picks):
        img = cv2.imread(os.path.join(faces_dir, name))
        if img is None:
            sys.exit(f"cannot read {name}")
        rng = np.random.default_rng([seed, k])
        valid = [[float(r[c]) for c in "xywh"] for r in faces[name] if r["invalid"] == "0"]
        aim = (np.average([(x + w / 2, y + h / 2) for x, y, w, h in valid], axis=0,
                          weights=[w * h for _, _, w, h in valid]) if valid
               else (img.shape[1] / 2, img.shape[0] / 2))
        for s, tx, ty in camera_path(img.shape[1], img.shape[0], n, rng, aim):
            here_all, here_kept = [], []
            for r in faces[name]:
                x, y, w, h = map_box(*(float(r[c]) for c in "xywh"), s, tx, ty)
                x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, W), min(y + h, H)
                if w <= 0 or h <= 0 or x1 <= x0 or y1 <= y0:
                    continue
                here_all.append((x, y, w, h))
                if r["invalid"] == "0" and (x1 - x0) * (y1 - y0) >= 0.9 * w * h:
                    here_kept.append((x0, y0, x1 - x0, y1 - y0))
            all_boxes.append(here_all)
            kept.append(here_kept)
    gt = load_gt(clip)
    mismatch = sum(len(gt.get(f, [])) != len(kept[f]) for f in range(len(kept)))
    if mismatch:
        sys.exit(f"{mismatch} frames' boxes differ from {clip}/gt.csv: wrong --seed, --photos or FACES_DIR?")
    return all_boxes
