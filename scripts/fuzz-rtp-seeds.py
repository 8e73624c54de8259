#!/usr/bin/env python3
"""Seed inputs for fuzz/fuzz_rtp.cpp: real RTP from ffmpeg's packetizer, in the target's format.

  scripts/fuzz-rtp-seeds.py OUT_DIR

Generates 12 frames of a small test pattern (VP8 and H.264, 96x64 and 160x96), sends it as RTP
(payload type 96) to a loopback socket here, and writes each capture as
[codec byte][u8 ms since the previous datagram][u16 length][datagram]... . Also writes two
variants of the VP8 capture: the publisher restarting with its SSRC (sequence and timestamp
jump after a 150 ms pause) and a second SSRC interleaved.
"""
import os
import socket
import struct
import subprocess
import sys
import time


def capture(codec, size):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.5)
    port = sock.getsockname()[1]
    enc = ["-c:v", "libvpx", "-deadline", "realtime", "-b:v", "200k"] if codec == "vp8" else \
          ["-c:v", "libx264", "-profile:v", "baseline", "-tune", "zerolatency", "-bsf:v", "h264_mp4toannexb"]
    cmd = ["ffmpeg", "-loglevel", "error", "-re", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=30",
           "-frames:v", "12", *enc, "-payload_type", "96", "-ssrc", "305419896", "-f", "rtp",
           f"rtp://127.0.0.1:{port}?pkt_size=600"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    packets, last = [], None
    while True:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            if proc.poll() is not None:
                break
            continue
        now = time.monotonic()
        dt = 0 if last is None else min(255, int((now - last) * 1000))
        last = now
        packets.append((dt, data))
    proc.wait()
    return packets


def encode(codec_byte, packets):
    out = bytes([codec_byte])
    for dt, p in packets:
        out += struct.pack(">BH", dt, len(p)) + p
    return out


def with_fields(p, seq=None, ts=None, ssrc=None):
    b = bytearray(p)
    if seq is not None:
        b[2:4] = struct.pack(">H", seq & 0xFFFF)
    if ts is not None:
        b[4:8] = struct.pack(">I", ts & 0xFFFFFFFF)
    if ssrc is not None:
        b[8:12] = struct.pack(">I", ssrc)
    return bytes(b)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    vp8 = capture("vp8", "96x64")
    h264 = capture("h264", "160x96")
    if not vp8 or not h264:
        sys.exit("fuzz-rtp-seeds: ffmpeg sent no RTP")
    open(os.path.join(out, "vp8.bin"), "wb").write(encode(0, vp8))
    open(os.path.join(out, "h264.bin"), "wb").write(encode(1, h264))
    # The same SSRC restarting: a new sequence and timestamp base after 150 ms.
    half = len(vp8) // 2
    restarted = vp8[:half] + [(150 if i == 0 else dt, with_fields(p, seq=struct.unpack(">H", p[2:4])[0] + 20000,
                                                                  ts=struct.unpack(">I", p[4:8])[0] + 9000000))
                              for i, (dt, p) in enumerate(vp8[half:])]
    open(os.path.join(out, "vp8-restart-same-ssrc.bin"), "wb").write(encode(0, restarted))
    # A second SSRC interleaved (forged or stray packets).
    mixed = []
    for dt, p in vp8:
        mixed.append((dt, p))
        mixed.append((0, with_fields(p, ssrc=0xDEADBEEF, seq=12345)))
    open(os.path.join(out, "vp8-foreign-ssrc.bin"), "wb").write(encode(0, mixed))
    print(f"fuzz-rtp-seeds: {len(vp8)} VP8 and {len(h264)} H.264 datagrams -> {out}")


if __name__ == "__main__":
    main()
