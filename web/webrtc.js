"use strict";
// Shared by the publish and watch pages (served at /webrtc.js): WHIP/WHEP signalling
// (non-trickle: the offer goes once ICE gathering is complete), the frame-code reader and a
// per-frame timer that survives its video not being rendered.
const veilRtc = (() => {
  const $ = id => document.getElementById(id);

  function status(text, cls) {
    $("status").textContent = text;
    $("status").className = cls || "";
  }

  // A frame code in the source (the test camera draws one: 10 blocks of 16 px in the top-left
  // corner, white, black, then the frame number mod 256, MSB first). Blocks that are not clearly
  // black or white (no code, or a whole-frame mosaic over it) give null.
  const canvas = document.createElement("canvas");
  canvas.width = 160;
  canvas.height = 16;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  function readCode(video) {
    if (video.videoWidth < 160 || video.videoHeight < 16) return null;
    ctx.drawImage(video, 0, 0, 160, 16, 0, 0, 160, 16);
    const px = ctx.getImageData(0, 8, 160, 1).data;
    let value = 0;
    for (let i = 0; i < 10; ++i) {
      const o = (i * 16 + 8) * 4, y = (px[o] + px[o + 1] + px[o + 2]) / 3;
      if (y > 60 && y < 195) return null;
      const bit = y >= 195 ? 1 : 0;
      if ((i === 0 && !bit) || (i === 1 && bit)) return null;
      if (i >= 2) value = (value << 1) | bit;
    }
    return value;
  }

  // Times every displayed frame that carries a code: [code, wall-clock ms] into `list` (the
  // last 900). Frame callbacks stop while the video is not rendered: call check() now and then
  // (the pages do it every second) to re-arm them.
  function codeTimer(video, list, active) {
    let handle = 0, last = 0;
    const step = () => {
      handle = 0;
      last = performance.now();
      if (!active()) return;
      const c = readCode(video);
      if (c !== null) {
        list.push([c, performance.timeOrigin + performance.now()]);
        if (list.length > 900) list.shift();
      }
      handle = video.requestVideoFrameCallback(step);
    };
    const arm = () => {
      if (handle) video.cancelVideoFrameCallback(handle);
      last = performance.now();
      handle = video.requestVideoFrameCallback(step);
    };
    return { arm, check: () => { if (performance.now() - last > 1000) arm(); } };
  }

  function waitGathering(pc, ms) {
    if (pc.iceGatheringState === "complete") return Promise.resolve();
    return new Promise(resolve => {
      pc.addEventListener("icegatheringstatechange", () => { if (pc.iceGatheringState === "complete") resolve(); });
      setTimeout(resolve, ms);  // send what we have
    });
  }

  function auth(token, headers = {}) {
    if (token) headers.Authorization = "Bearer " + token;
    return headers;
  }

  // Offers `pc`'s local description at `url` (WHIP or WHEP), applies the answer and returns the
  // resource URL (Location) to DELETE when done. Throws with the server's reason on refusal.
  async function negotiate(pc, url, token) {
    await pc.setLocalDescription(await pc.createOffer());
    await waitGathering(pc, 2000);
    const r = await fetch(url, {
      method: "POST", headers: auth(token, { "Content-Type": "application/sdp" }), body: pc.localDescription.sdp,
    });
    if (r.status !== 201) {
      let why = r.status + "";
      try { why += ": " + (await r.json()).error; } catch (e) {}
      throw new Error("the server refused (" + why + ")");
    }
    // Relative to where the offer ended up: a cluster node may have redirected it (307) to the
    // node that takes the session, and the resource lives there.
    const location = r.headers.get("Location");
    const resource = location ? new URL(location, r.url).href : null;
    await pc.setRemoteDescription({ type: "answer", sdp: await r.text() });
    return resource;
  }

  async function hangUp(resource, token) {
    if (resource) await fetch(resource, { method: "DELETE", headers: auth(token), keepalive: true }).catch(() => {});
  }

  // The candidate pair in use: its round trip, ms (null before one is known).
  function rttMs(report) {
    let rtt = null;
    report.forEach(s => {
      if (s.type === "candidate-pair" && s.nominated && s.state === "succeeded" && s.currentRoundTripTime !== undefined)
        rtt = s.currentRoundTripTime * 1000;
    });
    return rtt;
  }

  return { $, status, readCode, codeTimer, negotiate, hangUp, rttMs };
})();
