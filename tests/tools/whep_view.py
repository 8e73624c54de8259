#!/usr/bin/python3
"""A WHEP viewer that is not veil's: GStreamer webrtcbin (Debian python3-gi), loopback only.

  whep_view.py URL/whep/SESSION [--record out.ivf] [--seconds 10] [--token T] [--idle-exit 2]
               [--leave-after S] [--wait S]

Sends a recvonly VP8 offer (ICE gathered first, no trickle; the only local address is
127.0.0.1), POSTs it, applies the answer, records the depayloaded VP8 frames as IVF, and ends
the resource with DELETE. Prints one JSON line: {"status", "connected", "frames", "keyframes",
"sizes", "first_frame_s"}. Exit 0 when at least one frame arrived, 1 when none did, 2 on a
refused offer. Used by scripts/soak.py for WHEP viewers that join and leave.
"""
import argparse
import json
import struct
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("Nice", "0.1")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC, Nice  # noqa: E402


class IvfWriter:
    def __init__(self, path):
        self.f = open(path, "wb") if path else None
        self.n = 0
        self.w = self.h = 0

    def write(self, data, pts):
        if not self.f:
            return
        if self.n == 0:
            self.f.write(b"\0" * 32)  # the header is written at close, with the size and count
        self.f.write(struct.pack("<IQ", len(data), pts) + data)
        self.n += 1

    def close(self):
        if not self.f:
            return
        if self.n:
            self.f.seek(0)
            self.f.write(b"DKIF" + struct.pack("<HHIHHIII", 0, 32, 0x30385056, self.w, self.h, 30, 1, self.n) +
                         b"\0" * 4)
        self.f.close()


def vp8_keyframe_size(data):
    """(width, height) of a VP8 keyframe, None for an inter frame."""
    if len(data) < 10 or data[0] & 1 or data[3:6] != b"\x9d\x01\x2a":
        return None
    w, h = struct.unpack("<HH", data[6:10])
    return w & 0x3FFF, h & 0x3FFF


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("--record", default=None)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--idle-exit", type=float, default=0, help="stop after this long without a frame (0: never)")
    ap.add_argument("--leave-after", type=float, default=0,
                    help="leave (DELETE) this long after the first frame, while the session goes on (0: stay)")
    ap.add_argument("--token", default=None)
    ap.add_argument("--wait", type=float, default=0,
                    help="the session may not exist yet: retry a 404 answer for this long (GStreamer and ICE are "
                         "ready by then, so the viewer joins as soon as the session is there)")
    a = ap.parse_args()
    Gst.init(None)

    pipe = Gst.Pipeline.new("whep")
    webrtc = Gst.ElementFactory.make("webrtcbin", "w")
    webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
    pipe.add(webrtc)
    ice = webrtc.get_property("ice-agent")
    ice.set_property("ice-tcp", False)
    agent = ice.get_property("agent")
    addr = Nice.Address.new()
    addr.set_from_string("127.0.0.1")
    agent.add_local_address(addr)

    out = {"status": 0, "connected": False, "frames": 0, "keyframes": 0, "sizes": [], "first_frame_s": None}
    ivf = IvfWriter(a.record)
    lock = threading.Lock()
    last_frame = [time.monotonic()]
    t0 = time.monotonic()
    loop = GLib.MainLoop()
    resource = [None]

    def on_sample(sink):
        s = sink.emit("pull-sample")
        buf = s.get_buffer()
        ok, info = buf.map(Gst.MapFlags.READ)
        if not ok:
            return Gst.FlowReturn.OK
        data = bytes(info.data)
        buf.unmap(info)
        with lock:
            size = vp8_keyframe_size(data)
            if out["frames"] == 0 and size is None:
                return Gst.FlowReturn.OK  # an IVF starts at a keyframe
            if size:
                out["keyframes"] += 1
                if not out["sizes"] or out["sizes"][-1] != list(size):
                    out["sizes"].append(list(size))
                ivf.w, ivf.h = ivf.w or size[0], ivf.h or size[1]
            if out["first_frame_s"] is None:
                out["first_frame_s"] = round(time.monotonic() - t0, 2)
            ivf.write(data, out["frames"])
            out["frames"] += 1
            last_frame[0] = time.monotonic()
        return Gst.FlowReturn.OK

    def on_pad(_, pad):
        if pad.direction != Gst.PadDirection.SRC:
            return
        depay = Gst.ElementFactory.make("rtpvp8depay")
        sink = Gst.ElementFactory.make("appsink")
        sink.set_property("emit-signals", True)
        sink.set_property("sync", False)
        sink.connect("new-sample", on_sample)
        for e in (depay, sink):
            pipe.add(e)
            e.sync_state_with_parent()
        depay.link(sink)
        pad.link(depay.get_static_pad("sink"))

    def post_offer():
        sdp = webrtc.get_property("local-description").sdp.as_text()
        headers = {"Content-Type": "application/sdp"}
        if a.token:
            headers["Authorization"] = "Bearer " + a.token
        req = urllib.request.Request(a.url, data=sdp.encode(), method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=15) as r:
                out["status"] = r.status
                loc = r.headers.get("Location")
                resource[0] = urllib.parse.urljoin(a.url, loc) if loc else None
                answer = r.read().decode()
        except urllib.error.HTTPError as e:
            if e.code == 404 and time.monotonic() - t0 < a.wait:
                GLib.timeout_add(100, post_offer)  # not there yet: ask again
                return False
            out["status"] = e.code
            out["error"] = e.read().decode()[:300]
            loop.quit()
            return False
        except OSError as e:
            out["error"] = str(e)
            loop.quit()
            return False
        _, msg = GstSdp.SDPMessage.new_from_text(answer)
        desc = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, msg)
        webrtc.emit("set-remote-description", desc, Gst.Promise.new())
        return False

    def on_gathering(*_):
        if webrtc.get_property("ice-gathering-state") == GstWebRTC.WebRTCICEGatheringState.COMPLETE:
            GLib.idle_add(post_offer)

    def on_offer(promise, _):
        reply = promise.get_reply()
        offer = reply.get_value("offer")
        webrtc.emit("set-local-description", offer, Gst.Promise.new())

    def on_negotiation(_):
        webrtc.emit("create-offer", None, Gst.Promise.new_with_change_func(on_offer, None))

    def on_state(*_):
        if webrtc.get_property("connection-state") == GstWebRTC.WebRTCPeerConnectionState.CONNECTED:
            out["connected"] = True

    webrtc.connect("pad-added", on_pad)
    webrtc.connect("notify::ice-gathering-state", on_gathering)
    webrtc.connect("notify::connection-state", on_state)
    webrtc.connect("on-negotiation-needed", on_negotiation)
    caps = Gst.Caps.from_string("application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000")
    webrtc.emit("add-transceiver", GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY, caps)

    def tick():
        now = time.monotonic()
        with lock:
            idle = out["frames"] > 0 and a.idle_exit > 0 and now - last_frame[0] > a.idle_exit
            leave = out["first_frame_s"] is not None and a.leave_after > 0 and now - t0 > out["first_frame_s"] + a.leave_after
        if now - t0 > a.seconds or idle or leave:
            loop.quit()
            return False
        return True

    GLib.timeout_add(100, tick)
    pipe.set_state(Gst.State.PLAYING)
    loop.run()
    if resource[0]:
        headers = {"Authorization": "Bearer " + a.token} if a.token else {}
        try:
            urllib.request.urlopen(urllib.request.Request(resource[0], method="DELETE", headers=headers), timeout=5)
        except OSError:
            pass  # the session may be gone already
    pipe.set_state(Gst.State.NULL)
    with lock:
        ivf.close()
        print(json.dumps(out), flush=True)
    if out["status"] not in (200, 201):
        return 2
    return 0 if out["frames"] else 1


if __name__ == "__main__":
    sys.exit(main())
