#!/usr/bin/env python3
"""Would an int8 YuNet make detection cheaper (issue 12)? OpenCV's own post-training quantization.

Quantizes YuNet with cv2.dnn.Net.quantize (OpenCV 4.6, Debian 12), calibrated on frames of a
CC BY clip from ../shared/assets/video (not the evaluation photos), and compares it with the fp32
network on the same frames, one thread, by process CPU time: ms per 640x384 forward pass
(veil's 640x360 detection copy, padded to a multiple of 32), and the largest difference of each
output head against fp32.

Usage: scripts/yunet-int8-check.py [--assets DIR] [--frames 40] [--rounds 3]
"""
import argparse
import os
import time

import cv2
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--assets", default=os.path.join(here, "..", "..", "shared", "assets"))
ap.add_argument("--frames", type=int, default=40)
ap.add_argument("--rounds", type=int, default=3)
a = ap.parse_args()
cv2.setNumThreads(1)
model = os.path.join(a.assets, "models", "face_detection_yunet_2023mar.onnx")
cap = cv2.VideoCapture(os.path.join(a.assets, "video", "tears_of_steel_actors_640x360.mp4"))
frames = []
while len(frames) < max(a.frames, 200):
    ok, f = cap.read()
    if not ok:
        break
    frames.append(cv2.resize(f, (640, 360)))
if len(frames) < 20:
    raise SystemExit("cannot read the clip")


def blob(f):  # YuNet takes BGR 0..255; pad 360 -> 384 rows as veil does
    return cv2.dnn.blobFromImage(cv2.copyMakeBorder(f, 0, 24, 0, 0, cv2.BORDER_CONSTANT))


def load():
    n = cv2.dnn.readNet(model)
    n.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    n.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    return n


fp32 = load()
calib = [np.concatenate([blob(frames[i]) for i in range(0, len(frames), 20)], 0)]
t = time.process_time()
int8 = load().quantize(calib, cv2.CV_32F, cv2.CV_32F)
print(f"quantized in {time.process_time() - t:.2f} s of CPU, calibrated on {calib[0].shape[0]} frames")
outs = fp32.getUnconnectedOutLayersNames()


def run(n, f):
    n.setInput(blob(f))
    return n.forward(outs)


for k in range(a.rounds):
    row = []
    for name, n in (("fp32", fp32), ("int8", int8)):
        t = time.process_time()
        for f in frames[:a.frames]:
            run(n, f)
        row.append(f"{name} {(time.process_time() - t) / a.frames * 1000:.1f} ms")
    print(f"round {k + 1}: " + ", ".join(row))
x, y = run(fp32, frames[50]), run(int8, frames[50])
for name, p, q in zip(outs, x, y):
    print(f"  {name}: fp32 max |value| {float(np.abs(p).max()):.3f}, int8 max |difference| {float(np.abs(p - q).max()):.3f}")
