#!/usr/bin/python3
"""Judge still images of a processed leakcheck clip against its ground truth: which annotated
faces does each image leave visible? No detector is involved.

usage: snapshot_faces.py CLIP_DIR IMAGE... [--min-side 48] [--t-ssim 0.91] [--frames N] [--leakcheck DIR]

CLIP_DIR is what ../shared/tools/leakcheck/make_clip.py wrote (master.mkv, gt.csv). Each IMAGE is
a picture of some frame of the clip at any size (e.g. veil's 480x270 snapshots); which frame is
not known, so it is found: the lossless master, scaled to the image's size with an area filter
(as veil scales), is compared with the image at 1/8 size over the whole frame (a mosaic keeps
its cells' averages, so this finds the shot and the place in it), then the 7 best candidates at
full size outside the faces (boxes grown 50% per side). Each face of the chosen frame whose min
side is >= --min-side px in the clip is judged as leakcheck's score.py judges it, on the image's
scale: both boxes resized to 64x64, SSIM over the best-preserved half, leaked when >= --t-ssim.
Images may differ in size: each size is judged against the master at that size. --frames N limits
the search to the clip's first N frames (a camera that loops them). Prints JSON: per image the matched frame, match error, faces judged, faces leaked, SSIMs.
"""
import argparse
import json
import os
import sys

import cv2
import numpy as np


def judge_size(a, gt, paths, imgs, t_ssim, out, idx):
    from common import int_box, read_frames
    from score import patch64, ssim_map
    h, w = imgs[0].shape
    sx = w / 1280.0
    master = []
    for m in read_frames(f"{a.clip_dir}/master.mkv"):
        master.append(cv2.resize(m, (w, h), interpolation=cv2.INTER_AREA))
        if a.frames and len(master) >= a.frames:
            break
    small = lambda z: cv2.resize(z, (max(1, w // 8), max(1, h // 8)), interpolation=cv2.INTER_AREA).astype(np.float32)
    master_small = np.stack([small(m) for m in master])

    for slot, path, im in zip(idx, paths, imgs):
        coarse = np.abs(master_small - small(im)[None]).mean(axis=(1, 2))
        best, best_err = None, None
        for f in np.argsort(coarse)[:7]:
            mask = np.ones((h, w), bool)
            for x, y, bw, bh, *_ in gt.get(int(f), []):
                x0, y0, x1, y1 = int_box(sx * (x - 0.5 * bw), sx * (y - 0.5 * bh), sx * 2 * bw, sx * 2 * bh, (h, w))
                mask[y0:y1, x0:x1] = False
            diff = np.abs(master[f].astype(np.float32) - im.astype(np.float32))
            err = float(diff[mask].mean()) if mask.mean() > 0.05 else float(coarse[f])
            if best_err is None or err < best_err:
                best, best_err = int(f), err
        faces = []
        for x, y, bw, bh, minside, clear, fid in gt.get(best, []):
            if minside < a.min_side:
                continue
            box = int_box(sx * x, sx * y, sx * bw, sx * bh, (h, w))
            pm, pp = patch64(master[best], box), patch64(im, box)
            s = ssim_map(pm, pp)[0]
            half = float(max(s[:, :32].mean(), s[:, 32:].mean(), s[:32].mean(), s[32:].mean()))
            faces.append({"face": fid, "minside": minside, "ssim_half": round(half, 4), "leaked": half >= t_ssim})
        out[slot] = ({"image": path, "frame": best, "match_error": round(best_err, 2),
                    "coarse_error": round(float(coarse[best]), 2), "faces": len(faces),
                    "leaked": sum(f["leaked"] for f in faces), "detail": faces})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("clip_dir")
    ap.add_argument("images", nargs="+")
    ap.add_argument("--min-side", type=float, default=48)
    ap.add_argument("--frames", type=int, default=0, help="only the clip's first N frames are candidates (0: all)")
    ap.add_argument("--t-ssim", type=float, default=None, help="default: leakcheck's calibrated T_SSIM")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--leakcheck", default=os.environ.get("VEIL_LEAKCHECK",
                    os.path.join(here, "..", "..", "..", "shared", "tools", "leakcheck")))
    a = ap.parse_args()
    sys.dont_write_bytecode = True
    sys.path.insert(0, a.leakcheck)
    from common import load_gt  # the instrument's own helpers
    from score import T_SSIM
    t_ssim = T_SSIM if a.t_ssim is None else a.t_ssim

    imgs = []
    for path in a.images:
        im = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        if im is None:
            sys.exit(f"snapshot_faces: cannot read {path}")
        imgs.append(im)
    gt = load_gt(a.clip_dir)
    out = [None] * len(imgs)
    for shape in sorted({im.shape for im in imgs}):  # images of each size against the master at that size
        idx = [i for i, im in enumerate(imgs) if im.shape == shape]
        judge_size(a, gt, [a.images[i] for i in idx], [imgs[i] for i in idx], t_ssim, out, idx)
    print(json.dumps({"t_ssim": t_ssim, "min_side": a.min_side, "images": out}, indent=1))


if __name__ == "__main__":
    main()
