#!/usr/bin/python3
"""Do YuNet's landmarks say on which side a head reaches past its detected box? (issue 14)

Round masks (docs/privacy.md, "Round masks") leak turned heads whose detected box sits off the
annotated face: a rectangle's corner used to cover part of what lies outside the box. Issue 14
asks for masks fitted from the five landmarks YuNet already outputs (eyes, nose tip, mouth
corners). This study asks, on the annotated photos (ground truth, no detector as the judge),
whether the landmarks predict that offset:

  1. each photo is scaled to fit 640x640 (area filter) and YuNet (the default model, decoded as
     veil decodes it, plus its kps outputs) runs at score 0.5;
  2. each detection is matched to the annotated face it overlaps most (IoU >= 0.3), faces of
     at least --min-side px in the scaled photo;
  3. its turn is the nose tip's offset from the eyes' midpoint, over the box's width (signed:
     > 0 when the nose is right of the eyes, the face turned to the image's right);
  4. its reach is how far the annotated box passes the detected one on each side, over the
     detected width (left, right), split into the side the nose points to and the side away.

Printed: reach percentiles on the nose side and the far side, per bucket of |turn|. If the far
side's reach grows with the turn, a mask could grow on that side only.

  scripts/landmark-reach-study.py FACES_DIR [--models DIR] [--min-side 20] [--csv OUT]
"""
import argparse
import csv
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from leakcheck_faces import iou  # noqa: E402

OUTS = ["cls_8", "cls_16", "cls_32", "obj_8", "obj_16", "obj_32", "bbox_8", "bbox_16", "bbox_32",
        "kps_8", "kps_16", "kps_32"]


def detect(net, img, low=0.5, nms_iou=0.3):
    """src/vision/yunet.cpp's decoding in numpy, with the five landmarks of each box
    ((c + kps) * stride, as the box centre)."""
    import cv2
    h, w = img.shape[:2]
    ph, pw = (h + 31) // 32 * 32, (w + 31) // 32 * 32
    pad = cv2.copyMakeBorder(img, 0, ph - h, 0, pw - w, cv2.BORDER_CONSTANT, value=(0, 0, 0))
    net.setInput(pad.astype(np.float32).transpose(2, 0, 1)[None])
    outs = net.forward(OUTS)
    boxes, scores, marks = [], [], []
    for i, s in enumerate((8, 16, 32)):
        cols = pw // s
        sc = np.sqrt(np.clip(outs[i].reshape(-1), 0, 1) * np.clip(outs[3 + i].reshape(-1), 0, 1))
        bb = outs[6 + i].reshape(-1, 4)
        kp = outs[9 + i].reshape(-1, 10)
        for idx in np.nonzero(sc >= low)[0]:
            r, c = divmod(int(idx), cols)
            cx, cy = (c + bb[idx, 0]) * s, (r + bb[idx, 1]) * s
            bw, bh = np.exp(bb[idx, 2]) * s, np.exp(bb[idx, 3]) * s
            boxes.append([float(cx - bw / 2), float(cy - bh / 2), float(bw), float(bh)])
            scores.append(float(sc[idx]))
            marks.append([((c + kp[idx, 2 * j]) * s, (r + kp[idx, 2 * j + 1]) * s) for j in range(5)])
    keep = cv2.dnn.NMSBoxes(boxes, scores, low, nms_iou) if boxes else []
    return [(boxes[k], scores[k], marks[k]) for k in np.array(keep).reshape(-1)]


def main():
    import cv2
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("faces")
    ap.add_argument("--models", default=os.path.join(HERE, "..", "..", "shared", "assets", "models"))
    ap.add_argument("--min-side", type=float, default=20)
    ap.add_argument("--csv")
    a = ap.parse_args()
    model = os.path.join(a.models, "face_detection_yunet_2023mar.onnx")
    gt_csv = os.path.join(a.faces, "ground_truth.csv")
    for p in (model, gt_csv):
        if not os.path.exists(p):
            sys.exit(f"landmark-reach-study: {p} not found")
    net = cv2.dnn.readNet(model)
    faces = {}
    with open(gt_csv) as f:
        for r in csv.DictReader(f):
            if r["invalid"] == "1" or int(r["w"]) <= 0 or int(r["h"]) <= 0:
                continue
            faces.setdefault(r["image"], []).append(
                (float(r["x"]), float(r["y"]), float(r["w"]), float(r["h"]), r["pose"], r["occlusion"]))
    rows = []
    for image, fs in sorted(faces.items()):
        img = cv2.imread(os.path.join(a.faces, image))
        if img is None:
            sys.exit(f"landmark-reach-study: cannot read {image}")
        k = 640.0 / max(img.shape[:2])
        small = cv2.resize(img, (round(img.shape[1] * k), round(img.shape[0] * k)), interpolation=cv2.INTER_AREA)
        for box, score, m in detect(net, small):
            scaled = [(x * k, y * k, w * k, h * k, pose, occ) for x, y, w, h, pose, occ in fs]
            best = max(scaled, key=lambda g: iou(box, g[:4]), default=None)
            if best is None or iou(box, best[:4]) < 0.3 or min(best[2], best[3]) < a.min_side:
                continue
            x, y, w, h = box
            gx, gy, gw, gh = best[:4]
            turn = (m[2][0] - (m[0][0] + m[1][0]) / 2) / w
            left, right = (x - gx) / w, (gx + gw - (x + w)) / w
            near, far = (right, left) if turn > 0 else (left, right)
            rows.append({"image": image, "score": round(score, 3), "turn": round(turn, 4), "left": round(left, 4),
                         "right": round(right, 4), "near": round(near, 4), "far": round(far, 4),
                         "top": round((y - gy) / h, 4), "bottom": round((gy + gh - (y + h)) / h, 4),
                         "min_side": round(min(gw, gh), 1), "pose": best[4], "occlusion": best[5]})
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            wr.writeheader()
            wr.writerows(rows)
    print(f"{len(rows)} detections matched to annotated faces >= {a.min_side:g} px (IoU >= 0.3)")
    print("reach past the detected box, fraction of its width: p50 / p90 / p95")
    print(f"{'|turn|':>12} {'n':>4}  {'nose side':>20}  {'far side':>20}  {'top':>20}")
    edges = [0, 0.03, 0.06, 0.1, 0.15, 1.0]
    for lo, hi in zip(edges, edges[1:]):
        sel = [r for r in rows if lo <= abs(r["turn"]) < hi]
        if not sel:
            continue

        def q(key):
            v = np.array([r[key] for r in sel])
            return "{:+.3f} {:+.3f} {:+.3f}".format(*np.percentile(v, [50, 90, 95]))
        print(f"{lo:5.2f}-{hi:<5.2f} {len(sel):5d}  {q('near'):>20}  {q('far'):>20}  {q('top'):>20}")
    t = np.array([r["turn"] for r in rows])
    d = np.array([r["right"] - r["left"] for r in rows])
    print(f"correlation of the turn with (right reach - left reach): {np.corrcoef(t, d)[0, 1]:+.3f}")


if __name__ == "__main__":
    main()
