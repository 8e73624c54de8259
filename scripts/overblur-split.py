#!/usr/bin/env python3
"""What destroyed leakcheck's over-blur, mask by mask (issue 14).

Takes a leakcheck clip, `veil anonymize CLIP/input.ivf -o OUT --masks-csv MASKS` (the rectangles
veil pixelated, with the track behind each), and gives every pixel that leakcheck's own
over-blur measure (score.py: textured in the master, outside every gt.csv face grown by 50%,
local SSIM < 0.3) counts as destroyed to the first of these parts that covers it, as
`veil eval` splits its own (eval/motion_eval.h, SplitOverblur):

  whole_frame     a fail-closed frame (every destroyed pixel of that frame)
  face_box, face_growth, face_margin
                  a mask on a face of gt.csv (its track box's centre inside the face grown by
                  50%): its box, its growth for motion, the margin and cell snapping around them
  omitted_face    a mask on a face gt.csv leaves out (cut by the frame's edge, or invalid in
                  WIDER): hiding it is right, and the instrument counts it as over-blur
  stray_matched, stray_unconfirmed, stray_coasting
                  a mask on no face: the newest detection matched it; a lone low-score box not
                  confirmed yet; a confirmed track coasting without a match
  outside         in no listed mask (the SSIM window past a mask's edge, coding noise)

A mask is its rectangle less the rounded corners its round_* columns describe (mosaic.round,
the default); the face parts (box, growth) are rectangles within it.

Prints each part's points of the mean over-blur (they add up to it), the same per shot for the
shots that destroy the most, and the largest stray rectangles.

Usage: scripts/overblur-split.py CLIP_DIR FACES_DIR --seed N OUTPUT_VIDEO MASKS_CSV [--step 4]
       [--photos 24] [--seconds-per-photo 3] [--leakcheck DIR] [--json F]
"""
import argparse
import csv
import json
import os
import sys
from collections import defaultdict

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("clip")
ap.add_argument("faces")
ap.add_argument("video")
ap.add_argument("masks")
sys.path.insert(0, here)
from leakcheck_faces import add_clip_args, check_clip_args, every_face  # noqa: E402

add_clip_args(ap, here)
a = ap.parse_args()
check_clip_args(a)
from common import FPS, int_box, load_gt, read_frames  # noqa: E402  (leakcheck's own)
from score import OVERBLUR_GROW, OVERBLUR_SSIM, TEXTURE_STD, ssim_map  # noqa: E402

PARTS = ["whole_frame", "face_box", "face_growth", "face_margin", "omitted_face",
         "stray_matched", "stray_unconfirmed", "stray_coasting", "outside"]
P = {p: i for i, p in enumerate(PARTS)}

masks = defaultdict(list)
with open(a.masks) as f:
    r = csv.DictReader(f)
    need = {"frame", "x", "y", "w", "h", "kind", "confirmed", "core_x", "core_y", "core_w", "core_h",
            "grown_x", "grown_y", "grown_w", "grown_h"}
    if not need <= set(r.fieldnames or []):
        sys.exit(f"{a.masks}: not a `veil anonymize --masks-csv` file (columns {r.fieldnames})")
    for row in r:
        masks[int(row["frame"])].append(row)
every = every_face(a.clip, a.faces, a.seed, a.photos, a.seconds_per_photo)
gt = load_gt(a.clip)
shot_len = int(round(a.seconds_per_photo * FPS))


def rect(row, k):
    return tuple(int(row[k + c]) for c in ("x", "y", "w", "h")) if k else \
        tuple(int(row[c]) for c in ("x", "y", "w", "h"))


def centre_in(row, boxes):
    x, y, w, h = rect(row, "core_")
    cx, cy = x + w / 2, y + h / 2
    g = 0.5 + OVERBLUR_GROW
    return any(abs(cx - (bx + bw / 2)) <= g * bw and abs(cy - (by + bh / 2)) <= g * bh for bx, by, bw, bh, *_ in boxes)


rows, strays = [], []
for f, (m, p) in enumerate(zip(read_frames(os.path.join(a.clip, "master.mkv")), read_frames(a.video))):
    if f % a.step:
        continue
    boxes = gt.get(f, [])
    s, va = ssim_map(m.astype(np.float32), p.astype(np.float32))
    sel = va >= TEXTURE_STD ** 2
    for x, y, w, h, *_ in boxes:
        x0, y0, x1, y1 = int_box(x - OVERBLUR_GROW * w, y - OVERBLUR_GROW * h, (1 + 2 * OVERBLUR_GROW) * w,
                                 (1 + 2 * OVERBLUR_GROW) * h, m.shape)
        sel[y0:y1, x0:x1] = False
    judged = int(sel.sum())
    if judged == 0:
        continue
    destroyed = sel & (s < OVERBLUR_SSIM)
    label = np.full(m.shape, P["outside"], np.uint8)
    ms = masks.get(f, [])

    def paint(r, part):
        x, y, w, h = r
        label[max(y, 0):max(y + h, 0), max(x, 0):max(x + w, 0)] = P[part]

    def paint_mask(row, part):
        """The mask's pixels: its rectangle, less the rounded corners (vision/mosaic.h, RoundRect)."""
        x, y, w, h = rect(row, "")
        x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, m.shape[1]), min(y + h, m.shape[0])
        if x1 <= x0 or y1 <= y0:
            return
        if not row.get("round_cx"):
            label[y0:y1, x0:x1] = P[part]
            return
        cx, cy, ix, iy, rx, ry = (float(row["round_" + k]) for k in ("cx", "cy", "ix", "iy", "rx", "ry"))
        xs = np.arange(x0, x1) + 0.5
        ys = np.arange(y0, y1)[:, None] + 0.5
        dx = np.maximum(0.0, np.abs(xs - cx) - ix) / rx
        dy = np.maximum(0.0, np.abs(ys - cy) - iy) / ry
        inside = dx * dx + dy * dy <= 1.0
        label[y0:y1, x0:x1][inside] = P[part]

    if any(r["kind"] == "whole_frame" for r in ms):
        label[:] = P["whole_frame"]
    else:
        kind = []
        for r in ms:
            if centre_in(r, boxes):
                kind.append("face")
            elif centre_in(r, every[f] if f < len(every) else []):
                kind.append("omitted_face")
            elif r["confirmed"] == "0":
                kind.append("stray_unconfirmed")
            else:
                kind.append("stray_matched" if r["kind"] == "matched" else "stray_coasting")
        for part in ("stray_coasting", "stray_unconfirmed", "stray_matched", "omitted_face"):
            for r, k in zip(ms, kind):
                if k == part:
                    paint_mask(r, part)
        for r, k in zip(ms, kind):
            if k == "face":
                paint_mask(r, "face_margin")
        for key, part in (("grown_", "face_growth"), ("core_", "face_box")):
            for r, k in zip(ms, kind):
                if k == "face":
                    paint(rect(r, key), part)
        for r, k in zip(ms, kind):
            if k.startswith("stray"):
                x, y, w, h = rect(r, "")
                strays.append((int(destroyed[max(y, 0):y + h, max(x, 0):x + w].sum()) / judged, f, k, (x, y, w, h)))
    counts = np.bincount(label[destroyed], minlength=len(PARTS)) / judged
    rows.append({"frame": f, "shot": f // shot_len, "overblur": float(destroyed.sum()) / judged,
                 "parts": counts.tolist()})
if not rows:
    sys.exit("no frames judged")

mean = np.mean([r["overblur"] for r in rows])
parts = np.mean([r["parts"] for r in rows], axis=0)
print(f"{len(rows)} frames judged (every {a.step}th): over-blur mean {mean:.4f} (leakcheck's measure)")
print("  points of the mean: " + ", ".join(f"{p} {100 * v:.2f}" for p, v in zip(PARTS, parts)))
shots = defaultdict(list)
for r in rows:
    shots[r["shot"]].append(r)
print("shots that destroy the most (points of the whole clip's mean they account for; their largest parts):")
ranked = sorted(shots.items(), key=lambda kv: -sum(r["overblur"] for r in kv[1]))
for shot, rs in ranked[:8]:
    pts = np.sum([r["parts"] for r in rs], axis=0) / len(rows)
    top = sorted(zip(PARTS, pts), key=lambda kv: -kv[1])[:3]
    print(f"  shot {shot:2d} (frames {shot * shot_len}-{shot * shot_len + shot_len - 1}): "
          f"{100 * pts.sum():.2f} points; " + ", ".join(f"{p} {100 * v:.2f}" for p, v in top))
print("largest stray rectangles (share of their frame's judged area they destroyed):")
for share, f, k, (x, y, w, h) in sorted(strays, reverse=True)[:8]:
    print(f"  frame {f} (shot {f // shot_len}): {k} {w}x{h} at {x},{y}: {100 * share:.1f}%")
if a.json:
    with open(a.json, "w") as fh:
        json.dump({"parts": PARTS, "rows": rows}, fh)
