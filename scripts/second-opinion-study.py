#!/usr/bin/python3
"""Would UltraFace, asked about YuNet's low-score detections, tell faces from texture?

Issue 14 names UltraFace as a second opinion. Before building it into veil, this study asks the
question on a leakcheck clip, whose every face is known (leakcheck_faces.every_face, the faces
gt.csv omits included), so no detector is the judge:

  1. every --step-th frame of the clip's lossless master is scaled to the detection size
     (640x360, area filter, as veil scales) and YuNet (the default model, decoded as veil
     decodes it) runs at veil's tracker.low_score;
  2. each detection is "on a face" when it overlaps a true face box (IoU >= 0.2, or its centre
     inside the face box), else a stray;
  3. each detection under --below (veil's tracker.score, the score that starts a track) is shown
     to UltraFace RFB-320: a 4:3 crop around it, 2x the box's larger side high, cut from the
     full-resolution frame and scaled to 320x240; UltraFace's best face score among boxes whose
     centre lies in the detection's box is its opinion.

With --judge yunet-roi the second opinion is YuNet again, on a square crop around the detection
(2.5x its larger side) scaled to --roi-side, cut from the full frame or (--roi-from small) from the
detection copy, as veil's detector.second_look does (src/vision/second_look.h).

Printed: for low-score detections on faces and for strays, how many the judge confirms at each
threshold (also by box size), and its cost per crop. A useful second opinion confirms most faces
and few strays.

  scripts/second-opinion-study.py CLIP FACES_DIR --seed N [--step 3] [--models DIR]
                                  [--judge ultraface|yunet-roi] [--roi-side 128] [--roi-from full|small]
"""
import argparse
import os
import sys
import time
from collections import defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from leakcheck_faces import add_clip_args, check_clip_args, every_face, iou  # noqa: E402


def on_face(det, faces):
    cx, cy = det[0] + det[2] / 2, det[1] + det[3] / 2
    for f in faces:
        if iou(det, f) >= 0.2 or (f[0] <= cx <= f[0] + f[2] and f[1] <= cy <= f[1] + f[3]):
            return True
    return False


YUNET_OUTS = ["cls_8", "cls_16", "cls_32", "obj_8", "obj_16", "obj_32", "bbox_8", "bbox_16", "bbox_32"]


def yunet_detect(net, img, low, nms_iou=0.3):
    """veil's YuNet decoding (src/vision/yunet.cpp), in numpy: BGR 0..255 planes, padded at the
    bottom/right to multiples of 32, score sqrt(cls * obj), NMS. OpenCV 4.6's FaceDetectorYN
    cannot run the 2023mar model. Boxes (x, y, w, h) in img's pixels, with their scores."""
    import cv2
    h, w = img.shape[:2]
    ph, pw = (h + 31) // 32 * 32, (w + 31) // 32 * 32
    pad = cv2.copyMakeBorder(img, 0, ph - h, 0, pw - w, cv2.BORDER_CONSTANT, value=(0, 0, 0))
    net.setInput(pad.astype(np.float32).transpose(2, 0, 1)[None])
    outs = net.forward(YUNET_OUTS)
    boxes, scores = [], []
    for i, s in enumerate((8, 16, 32)):
        cols, rows = pw // s, ph // s
        cls = np.clip(outs[i].reshape(-1), 0, 1)
        obj = np.clip(outs[3 + i].reshape(-1), 0, 1)
        bb = outs[6 + i].reshape(-1, 4)
        sc = np.sqrt(cls * obj)
        for idx in np.nonzero(sc >= low)[0]:
            r, c = divmod(int(idx), cols)
            cx, cy = (c + bb[idx, 0]) * s, (r + bb[idx, 1]) * s
            bw, bh = np.exp(bb[idx, 2]) * s, np.exp(bb[idx, 3]) * s
            x0, y0 = np.clip(cx - bw / 2, 0, w), np.clip(cy - bh / 2, 0, h)
            x1, y1 = np.clip(cx + bw / 2, 0, w), np.clip(cy + bh / 2, 0, h)
            if x1 - x0 >= 1 and y1 - y0 >= 1:
                boxes.append([float(x0), float(y0), float(x1 - x0), float(y1 - y0)])
                scores.append(float(sc[idx]))
    keep = cv2.dnn.NMSBoxes(boxes, scores, low, nms_iou) if boxes else []
    return [(boxes[k], scores[k]) for k in np.array(keep).reshape(-1)]


def cut(frame, x0, y0, x1, y1):
    """frame[y0:y1, x0:x1], black where the rectangle passes the frame's edge."""
    import cv2
    H, W = frame.shape[:2]
    pad = cv2.copyMakeBorder(frame, max(0, -y0), max(0, y1 - H), max(0, -x0), max(0, x1 - W),
                             cv2.BORDER_CONSTANT, value=(0, 0, 0))
    return pad[y0 + max(0, -y0):y1 + max(0, -y0), x0 + max(0, -x0):x1 + max(0, -x0)]


def ultraface_opinion(net, frame, box):
    """UltraFace's best face score for a detection box (full-frame pixels)."""
    import cv2
    x, y, w, h = box
    ch = 2.0 * max(w, h)
    cw = ch * 4 / 3
    cx, cy = x + w / 2, y + h / 2
    x0, y0 = int(round(cx - cw / 2)), int(round(cy - ch / 2))
    x1, y1 = int(round(cx + cw / 2)), int(round(cy + ch / 2))
    crop = cut(frame, x0, y0, x1, y1)
    if crop.size == 0:
        return 0.0
    inp = cv2.resize(crop, (320, 240), interpolation=cv2.INTER_AREA)
    blob = ((inp[:, :, ::-1].astype(np.float32) - 127.0) / 128.0).transpose(2, 0, 1)[None]
    net.setInput(blob)
    scores, boxes = net.forward(["scores", "boxes"])
    s = scores[0, :, 1]
    b = boxes[0]
    # The detection's box in the crop's normalized coordinates.
    bx0, by0 = (x - x0) / (x1 - x0), (y - y0) / (y1 - y0)
    bx1, by1 = (x + w - x0) / (x1 - x0), (y + h - y0) / (y1 - y0)
    ccx, ccy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    inside = (ccx >= bx0) & (ccx <= bx1) & (ccy >= by0) & (ccy <= by1)
    return float(s[inside].max()) if inside.any() else 0.0


def yunet_roi_opinion(net, frame, box, side):
    """YuNet's best score on a second look: a square crop around the detection, 2.5x the box's
    larger side, cut from the full-resolution frame and scaled to side x side, so the face is
    seen at a larger scale than in the 640x360 pass. The score of the best box whose centre lies
    in the detection's box is the opinion."""
    import cv2
    x, y, w, h = box
    c = 2.5 * max(w, h)
    cx, cy = x + w / 2, y + h / 2
    x0, y0 = int(round(cx - c / 2)), int(round(cy - c / 2))
    x1, y1 = x0 + int(round(c)), y0 + int(round(c))
    crop = cut(frame, x0, y0, x1, y1)
    if crop.size == 0:
        return 0.0
    inp = cv2.resize(crop, (side, side), interpolation=cv2.INTER_AREA if crop.shape[0] > side else cv2.INTER_LINEAR)
    k = side / (x1 - x0)
    best = 0.0
    for (bx, by, bw, bh), s in yunet_detect(net, inp, 0.05):
        ccx, ccy = (bx + bw / 2) / k + x0, (by + bh / 2) / k + y0
        if x <= ccx <= x + w and y <= ccy <= y + h:
            best = max(best, s)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("clip", help="a make_clip.py output folder (master.mkv, gt.csv)")
    ap.add_argument("faces", help="the photos and ground_truth.csv the clip was made from")
    add_clip_args(ap, HERE)
    ap.set_defaults(step=3)
    ap.add_argument("--models", default=os.path.join(HERE, "..", "..", "shared", "assets", "models"))
    ap.add_argument("--low", type=float, default=0.15, help="veil's tracker.low_score")
    ap.add_argument("--judge", choices=("ultraface", "yunet-roi"), default="ultraface",
                    help="the second opinion: UltraFace RFB-320, or YuNet again on a larger crop")
    ap.add_argument("--roi-side", type=int, default=160, help="yunet-roi: the crop's side in pixels")
    ap.add_argument("--roi-from", choices=("full", "small"), default="full",
                    help="yunet-roi: cut the crop from the full-resolution frame or from the detection copy")
    ap.add_argument("--below", type=float, default=0.5, help="veil's tracker.score: detections under it are asked")
    a = ap.parse_args()
    check_clip_args(a)
    import cv2
    from common import H, W, read_frames

    cv2.setNumThreads(1)
    yunet = os.path.join(a.models, "face_detection_yunet_2023mar.onnx")
    uf = os.path.join(a.models, "version-RFB-320.onnx")
    for p in (yunet, uf):
        if not os.path.isfile(p):
            sys.exit(f"model missing: {p}")
    small = (640, 360)
    det = cv2.dnn.readNetFromONNX(yunet)
    net = cv2.dnn.readNetFromONNX(uf)
    faces = every_face(a.clip, a.faces, a.seed, a.photos, a.seconds_per_photo)
    k = W / small[0]
    rows = []  # (on_face, yunet score, ultraface score or None)
    uf_ms = []
    for i, frame in enumerate(read_frames(os.path.join(a.clip, "master.mkv"), "bgr24")):
        if i % a.step:
            continue
        sm = cv2.resize(frame, small, interpolation=cv2.INTER_AREA)
        for d, score in yunet_detect(det, sm, a.low):
            box = (d[0] * k, d[1] * k, d[2] * k, d[3] * k)
            face = on_face(box, faces[i] if i < len(faces) else [])
            opinion = None
            if score < a.below:
                t0 = time.perf_counter()
                opinion = (ultraface_opinion(net, frame, box) if a.judge == "ultraface"
                           else yunet_roi_opinion(det, frame, box, a.roi_side) if a.roi_from == "full"
                           else yunet_roi_opinion(det, sm, d, a.roi_side))
                uf_ms.append(1000 * (time.perf_counter() - t0))
            rows.append((face, score, opinion, max(d[2], d[3])))
    print(f"seed {a.seed}: {len(rows)} YuNet detections >= {a.low} on every {a.step}th frame; "
          f"{sum(r[0] for r in rows)} on faces, {sum(not r[0] for r in rows)} strays")
    asked = [r for r in rows if r[2] is not None]
    print(f"under {a.below} (asked): {sum(r[0] for r in asked)} on faces, {sum(not r[0] for r in asked)} strays; "
          f"{a.judge} {np.mean(uf_ms) if uf_ms else 0:.2f} ms per crop (1 thread)")
    print(f"| {a.judge} confirms at | faces kept | strays kept |")
    print("|---|---|---|")
    for t in ((0.3, 0.5, 0.7, 0.9) if a.judge == "ultraface" else (0.1, 0.2, 0.3, 0.5, 0.7)):
        fk = sum(1 for r in asked if r[0] and r[2] >= t)
        sk = sum(1 for r in asked if not r[0] and r[2] >= t)
        nf, ns = sum(r[0] for r in asked), sum(not r[0] for r in asked)
        print(f"| {t} | {fk} of {nf} ({100 * fk / max(nf, 1):.0f}%) | {sk} of {ns} ({100 * sk / max(ns, 1):.0f}%) |")
    print("by the detection's larger side in the 640x360 copy (kept at 0.3 / asked):")
    for lo, hi in ((0, 24), (24, 48), (48, 96), (96, 1e9)):
        band = [r for r in asked if lo <= r[3] < hi]
        f = [r for r in band if r[0]]
        st = [r for r in band if not r[0]]
        print(f"  [{lo}, {hi}) px: faces {sum(r[2] >= 0.3 for r in f)}/{len(f)}, strays {sum(r[2] >= 0.3 for r in st)}/{len(st)}")
    hist = defaultdict(lambda: [0, 0])
    for r in asked:
        hist[min(int(r[1] * 10), 9)][0 if r[0] else 1] += 1
    print("YuNet score band of the asked: " + ", ".join(f"{b / 10:.1f}: {v[0]} faces / {v[1]} strays"
                                                       for b, v in sorted(hist.items())))


if __name__ == "__main__":
    main()
