// A WHIP client that is not veil's own, in a browser that adapts its send resolution, then over an
// impaired network (issue 13).
//
// The Eyevinn WHIP web client (npm @eyevinn/whip-web-client 1.1.7, bundled here with esbuild) runs
// on a page of another origin and publishes a fake 720p30 camera from headless Chromium for 63 s.
// Its media reach veil through tests/tools/udp_impair.py: the WHIP answer's ICE candidate is
// rewritten (Playwright route) to the proxy's port, and the proxy forwards to veil's.
//  1. Resolution (0-40 s). Nothing sets `maintain-resolution`: Chromium lowers the resolution on
//     its own when CPU or bandwidth is short, and the page also steps
//     RTCRtpSender.scaleResolutionDownBy (2, 1, 1.5, 1, what the browser's own adaptation does)
//     so that every run has changes.
//  2. Impairment (40-55 s): 5% loss, 30 ms jitter, 1% reordering from the browser to veil
//     (RTCP back to the browser is not impaired). NACK (Chromium retransmits) and PLI (veil asks
//     for a keyframe when a frame was lost or does not decode) are what recover.
//  3. Recovery (55-63 s): the network is clean again.
// Checked:
//  - the session runs the whole time with no session_error, and veil counts every size change;
//  - a WHEP viewer (veil's watch page) follows every change: it decodes a keyframe at each new
//    size and keeps decoding after it; it never stops decoding for 2 s across the changes;
//  - under impairment a frame leaves veil in every second, on average >= MIN_IMPAIRED_SHARE of
//    the rate before it, and full rate (28 fps, 95% of that rate, or within 3 frames of what
//    the browser sent in the second where it sends less, at least 15) is back within 7 s of its
//    end (rates, NACKs, PLIs, the longest stall and the recovery time are printed); these rate
//    and timing marks are printed, not asserted, on a machine over 1.25x slower than the
//    reference (harness.mjs machineSpeed);
//  - privacy, judged against ground truth and no detector: the camera is the leakcheck clip, and
//    viewer frames captured right after each change and throughout the impairment are scored by
//    tests/tools/snapshot_faces.py; no clear face may show. In bypass the same judge sees faces.
// Loopback only (see harness.mjs). Figures are printed as "figure: ..." lines.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import {
  adopt, api, apiFresh, bin, browserPath, check, cleanup, clipDir, judgeGroundTruth, launchBrowser, makeGroundTruthCamera, media, run,
  shots, startServer, tallyGroundTruth, timingCheck, waitFor, machineSpeed,
} from "./harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const TOKEN = "eyevinn-test-token-0123456789";
// Phases, in seconds after the viewer's first frame.
const IMPAIR_FROM = 40, IMPAIR_TO = 55, SECONDS = 63;
// [seconds, scaleResolutionDownBy]
const STEPS = [[8, 2], [16, 1], [24, 1.5], [32, 1]];
// Under impairment the output frame rate must not fall under this share of the 8 s before it, in
// the same run (measured 0.88: see docs/figures.md). A share, not an fps: a software-encoding
// Chromium on a slow 2-core machine sends under 30 fps before any loss.
const MIN_IMPAIRED_SHARE = 0.7;
// Rates and timings are asserted on a machine of the reference's speed, reported on a slower one
// (harness.mjs machineSpeed); the session, the size changes, the keyframes and privacy always.
let checkTiming = check;
const CAPTURE_AT = [0.3, 0.55, 0.8, 3];  // s after a size change, viewer frames judged against ground truth
const camera = media + "/camera_leakcheck_720p30.y4m";
const CAMERA_FRAMES = 180;  // 6 s at 30 fps, looped by the fake camera
const frames = shots + "/whip-client-frames";


// The client and its dependencies (events, sdp-transform) as one browser module.
async function bundle() {
  const r = await build({
    stdin: { contents: 'export { WHIPClient } from "@eyevinn/whip-web-client";', resolveDir: here },
    bundle: true, format: "esm", platform: "browser", write: false, logLevel: "error",
  });
  return r.outputFiles[0].text;
}

// The publisher's page, served from its own origin (another port of 127.0.0.1).
const PAGE = `<!doctype html><meta charset="utf-8"><title>third-party WHIP publisher</title>
<video id="preview" autoplay muted playsinline></video>
<script type="module">
import { WHIPClient } from "/whip-client.js";
window.pub = { state: "idle", error: "", pc: null, client: null };
window.startPublish = async (endpoint, authkey) => {
  const stream = await navigator.mediaDevices.getUserMedia({ video: { width: 1280, height: 720, frameRate: 30 }, audio: false });
  document.getElementById("preview").srcObject = stream;
  const client = new WHIPClient({
    endpoint, opts: { authkey, iceServers: [] },
    peerConnectionFactory: cfg => (window.pub.pc = new RTCPeerConnection(cfg)),
  });
  window.pub.client = client;
  await client.ingest(stream);
  window.pub.pc.addEventListener("connectionstatechange", () => { window.pub.state = window.pub.pc.connectionState; });
  window.pub.state = window.pub.pc.connectionState;
};
window.scaleDown = async by => {
  const s = window.pub.pc.getSenders().find(x => x.track && x.track.kind === "video");
  const p = s.getParameters();
  if (!p.encodings || !p.encodings.length) p.encodings = [{}];
  p.encodings[0].scaleResolutionDownBy = by;
  await s.setParameters(p);
  return p.degradationPreference || "(browser default)";
};
window.outbound = async () => {
  for (const r of (await window.pub.pc.getStats()).values())
    if (r.type === "outbound-rtp" && r.kind === "video")
      return { w: r.frameWidth || 0, h: r.frameHeight || 0, sent: r.framesSent || 0, reason: r.qualityLimitationReason,
               changes: r.qualityLimitationResolutionChanges || 0, durations: r.qualityLimitationDurations || {},
               nacks: r.nackCount || 0, plis: (r.pliCount || 0) + (r.firCount || 0), retransmitted: r.retransmittedPacketsSent || 0,
               keyframes: r.keyFramesEncoded || 0, bytes: r.bytesSent || 0 };
  return null;
};
</script>`;


// The impairing proxy in front of veil's ICE port (one port: bundle and rtcp-mux). Resolves to
// { port, proc, on(), off(), counts() }: counts are the proxy's JSON lines, the last one at each switch.
function startProxy(toPort) {
  return new Promise((resolve, reject) => {
    const proc = spawn("/usr/bin/python3", [join(here, "..", "tools", "udp_impair.py"), "--listen", "127.0.0.1:0",
                                            "--to", "127.0.0.1:" + toPort, "--loss", "5", "--jitter-ms", "30",
                                            "--reorder", "1", "--delay-ms", "40", "--start-off"],
                       { stdio: ["ignore", "ignore", "pipe"] });
    adopt(proc);
    let err = "";
    let lines = [];
    proc.stderr.on("data", d => {
      err += d;
      lines = err.split("\n").slice(0, -1).filter(l => l.startsWith("{")).map(l => JSON.parse(l));  // complete lines
      const m = err.match(/listening on 127\.0\.0\.1:(\d+)/);
      if (m) resolve({ port: +m[1], proc, on: () => proc.kill("SIGUSR2"), off: () => proc.kill("SIGUSR1"), counts: () => lines });
    });
    proc.on("exit", c => reject(new Error("udp_impair.py exited " + c + ": " + err)));
  });
}
function serveStatic(js) {
  return new Promise(resolve => {
    const srv = createServer((req, res) => {
      if (req.url.startsWith("/whip-client.js")) {
        res.writeHead(200, { "Content-Type": "text/javascript" });
        return res.end(js);
      }
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(PAGE);
    });
    srv.listen(0, "127.0.0.1", () => resolve({ srv, url: `http://127.0.0.1:${srv.address().port}` }));
  });
}

async function main() {
  for (const [what, path] of [["VEIL_BIN", bin], ["the leakcheck clip", clipDir + "/master.mkv"], ["chromium", browserPath]])
    if (!path || !existsSync(path)) throw new Error(`${what} not found (${path}): run ./scripts/install-deps.sh and build first`);
  const speed = machineSpeed();
  if (speed.slow) checkTiming = timingCheck(`a machine ${speed.factor.toFixed(2)}x slower than the reference`);
  rmSync(frames, { recursive: true, force: true });
  mkdirSync(frames, { recursive: true });
  // The camera: the clip's first 6 s, lossless (annotated faces at known places).
  makeGroundTruthCamera(camera, CAMERA_FRAMES);
  const js = await bundle();
  const site = await serveStatic(js);

  const server = await startServer(["--publish-token", TOKEN, "--set", "webrtc.connect_timeout_ms=4000"]);
  const url = server.url;
  console.log(`veil serve on ${url}; the publisher's page on ${site.url}`);
  const browser = await launchBrowser([
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", "--use-file-for-fake-video-capture=" + camera,
    "--allow-loopback-in-peer-connection",
  ], 10);
  const errors = [];
  const pub = await browser.newPage({ viewport: { width: 800, height: 600 } });
  pub.on("pageerror", e => errors.push(String(e)));
  pub.on("console", m => { if (m.type() === "error") errors.push(m.text()); });
  await pub.goto(site.url + "/");
  // veil's answer goes to the browser with its candidate's port replaced by the proxy's.
  let proxy = null;
  await pub.route(url + "/whip/ey", async route => {
    const res = await route.fetch();
    let sdp = await res.text();
    const ports = [...new Set([...sdp.matchAll(/a=candidate:\S+ \d+ UDP \d+ 127\.0\.0\.1 (\d+) typ host/gi)].map(m => m[1]))];
    if (res.status() === 201 && ports.length === 1 && !proxy) {
      proxy = await startProxy(+ports[0]);
      sdp = sdp.replaceAll(` 127.0.0.1 ${ports[0]} typ host`, ` 127.0.0.1 ${proxy.port} typ host`);
    }
    await route.fulfill({ response: res, body: sdp });
  });

  // --- Publish with the third-party client, cross-origin ---
  const t0 = Date.now();
  await pub.evaluate(([e, k]) => window.startPublish(e, k), [url + "/whip/ey", TOKEN]);
  await waitFor(pub, () => window.pub.state === "connected" || window.pub.state === "failed", "the WHIP client to connect");
  check((await pub.evaluate(() => window.pub.state)) === "connected",
        `the Eyevinn WHIP client on ${site.url} publishes to veil (${Date.now() - t0} ms to connected)`);
  const s0 = (await api(url, "GET", "/v1/sessions/ey")).body;
  check(s0.ingest_type === "webrtc" && s0.codec === "vp8", "the WHIP offer created a VP8 WebRTC session");
  check(proxy !== null, `the media go through the impairing proxy (127.0.0.1:${proxy && proxy.port})`);

  // --- Watch on veil's own watch page ---
  const watch = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  watch.on("pageerror", e => errors.push(String(e)));
  await watch.goto(url + "/watch?session=ey");
  await waitFor(watch, () => window.veilWatch.stats.frames_decoded > 0, "the viewer's first frame");

  // --- 63 s: forced steps, the browser's own adaptation, the impaired network, recovery ---
  const samples = [];  // [s, width, height, keyframes, frames_decoded]
  const sizes = [];    // distinct viewer sizes in order: {w, h, at, kf, dec}
  const captures = []; // paths of viewer frames judged against ground truth
  const shotAt = [];   // per size: frames captured so far
  const perSecond = []; // server and publisher figures, once a second
  let step = 0, impaired = false, nextSecond = 1, nextImpairedShot = IMPAIR_FROM + 0.7;
  const capture = async name => {
    const d = await watch.evaluate(() => window.veilWatch.capture());
    const p = `${frames}/${name}.png`;
    writeFileSync(p, Buffer.from(d.split(",")[1], "base64"));
    captures.push(p);
  };
  const snap = async t => {
    const x = (await api(url, "GET", "/v1/sessions/ey/stats")).body;
    // The browser's outbound-rtp entry was missing from a getStats() call once in five runs:
    // counted as zeros then (these counters are reported, not asserted).
    const o = (await pub.evaluate(() => window.outbound())) || {};
    return { t, in: x.frames_received, out: x.frames_sent, stale: x.stale_drops || 0, held: x.held_frames || 0,
             sent: o.sent || 0, jb_lost: (x.publisher || {}).lost || 0, jb_late: (x.publisher || {}).late || 0,
             jb_nacks: (x.publisher || {}).nacks || 0, jb_recovered: (x.publisher || {}).recovered || 0, decode_errors: x.decode_errors, fail_closed: x.fail_closed_frames,
             key_requests: (x.publisher || {}).keyframe_requests || 0, srv_plis: (x.publisher || {}).plis || 0,
             nacks: o.nacks || 0, plis: o.plis || 0, retransmitted: o.retransmitted || 0, bytes: o.bytes || 0 };
  };
  perSecond.push(await snap(0));
  const tStart = Date.now();
  while (Date.now() - tStart < SECONDS * 1000) {
    const t = (Date.now() - tStart) / 1000;
    if (step < STEPS.length && t >= STEPS[step][0]) {
      const pref = await pub.evaluate(by => window.scaleDown(by), STEPS[step][1]);
      console.log(`t=${t.toFixed(1)} s: scaleResolutionDownBy ${STEPS[step][1]} (degradationPreference ${pref})`);
      ++step;
    }
    if (!impaired && t >= IMPAIR_FROM && t < IMPAIR_TO) {
      proxy.on();
      impaired = true;
      console.log(`t=${t.toFixed(1)} s: the network is impaired (5% loss, 30 ms jitter, 1% reordering)`);
    }
    if (impaired && t >= IMPAIR_TO) {
      proxy.off();
      impaired = false;
      console.log(`t=${t.toFixed(1)} s: the network is clean again`);
    }
    if (t >= nextSecond) {
      perSecond.push(await snap(nextSecond));
      ++nextSecond;
    }
    const st = await watch.evaluate(() => window.veilWatch.stats);
    samples.push([t, st.width, st.height, st.keyframes, st.frames_decoded]);
    const last = sizes[sizes.length - 1];
    if (t < IMPAIR_FROM && st.width && (!last || last.w !== st.width || last.h !== st.height))
      sizes.push({ w: st.width, h: st.height, at: t, kf: st.keyframes, dec: st.frames_decoded });
    // Privacy after a change: three frames in the first second (a scene cut's fail-closed run and
    // re-detection cover them) and one once the tracks are back. Under impairment: one every 1.5 s.
    const cur = sizes.length - 1;
    if (t < IMPAIR_FROM && cur >= 0 && (shotAt[cur] || 0) < CAPTURE_AT.length &&
        t - sizes[cur].at >= CAPTURE_AT[shotAt[cur] || 0]) {
      await capture(`size${cur}-${shotAt[cur] || 0}`);
      shotAt[cur] = (shotAt[cur] || 0) + 1;
    }
    if (t >= nextImpairedShot && t < IMPAIR_TO + 1) {
      await capture(`impaired-${(t - IMPAIR_FROM).toFixed(1)}s`);
      nextImpairedShot += 1.5;
    }
    await sleep(100);
  }
  const out = (await pub.evaluate(() => window.outbound())) || {};
  const stats = (await api(url, "GET", "/v1/sessions/ey/stats")).body;
  const events = (await api(url, "GET", "/v1/events")).body.events.filter(e => e.session === "ey");
  await watch.screenshot({ path: shots + "/whip-client-watch.png" });

  console.log("figure: viewer sizes in order: " + sizes.map(s => `${s.w}x${s.h}@${s.at.toFixed(1)}s`).join(" -> "));
  console.log(`figure: publisher (Chromium, no maintain-resolution): sent ${out.sent} frames, now ${out.w}x${out.h}, ` +
              `quality limitation ${out.reason}, ${out.changes} resolution changes by the browser's own adaptation, ` +
              `limited ${JSON.stringify(out.durations)}`);
  console.log(`figure: server: ${stats.resolution_changes} resolution changes, ${stats.frames_received} frames in, ` +
              `${stats.frames_sent} out, fail-closed ${stats.fail_closed_frames}, decode errors ${stats.decode_errors}`);
  console.log("figure: resolution_changed events: " + events.filter(e => e.type === "resolution_changed").map(e => e.detail).join("; "));

  // Frames sent in each second of (from, to], and the longest run of seconds with none.
  const outs = (from, to) => perSecond.filter(p => p.t > from && p.t <= to).map(p => p.out - perSecond.find(q => q.t === p.t - 1).out);
  const longestZeroRun = xs => xs.reduce((a, x) => x > 0 ? { run: 0, max: a.max } : { run: a.run + 1, max: Math.max(a.max, a.run + 1) },
                                         { run: 0, max: 0 }).max;
  // Phase figures from the per-second samples: [from, to) in seconds.
  const phase = (from, to) => {
    const a = perSecond.find(p => p.t === from), b = perSecond.find(p => p.t === to);
    const d = k => b[k] - a[k];
    return { s: to - from, fps_pub: d("sent") / (to - from), fps_in: d("in") / (to - from), fps_out: d("out") / (to - from),
             stale: d("stale"), held: d("held"), jb_lost: d("jb_lost"), jb_late: d("jb_late"), jb_nacks: d("jb_nacks"),
             jb_recovered: d("jb_recovered"), decode_errors: d("decode_errors"),
             fail_closed: d("fail_closed"), key_requests: d("key_requests"), srv_plis: d("srv_plis"), nacks: d("nacks"), plis: d("plis"),
             retransmitted: d("retransmitted"), kbps: (8 * d("bytes")) / 1000 / (to - from),
             min_out: Math.min(...outs(from, to)), max_silent: longestZeroRun(outs(from, to)) };
  };
  const fmt = p => `${p.fps_pub.toFixed(1)} fps sent by the browser, ${p.fps_in.toFixed(1)} in, ${p.fps_out.toFixed(1)} out ` +
                   `(worst second ${p.min_out}, ${p.stale} stale drops, ${p.held} held, ` +
                   `veil's jitter buffer: ${p.jb_lost} packets lost, ${p.jb_late} late, ${p.jb_nacks} NACKed, ${p.jb_recovered} recovered, ` +
                   `longest run of seconds with none ${p.max_silent}), ` +
                   `${p.decode_errors} decode errors, ${p.fail_closed} fail-closed, ${p.key_requests} keyframe requests and ${p.srv_plis} PLIs sent by veil, ` +
                   `${p.nacks} NACKs and ${p.plis} PLIs or FIRs seen by the browser, ${p.retransmitted} packets retransmitted, ` +
                   `${p.kbps.toFixed(0)} kbit/s sent`;
  const before = phase(IMPAIR_FROM - 8, IMPAIR_FROM), during = phase(IMPAIR_FROM, IMPAIR_TO), afterP = phase(IMPAIR_TO, SECONDS - 1);
  const proxyCounts = proxy.counts();
  const atOff = proxyCounts[proxyCounts.length - 1] || {}, atOn = proxyCounts[proxyCounts.length - 2] || {};
  console.log(`figure: proxy while impaired: ${(atOff.received || 0) - (atOn.received || 0)} datagrams, ` +
              `${(atOff.dropped || 0) - (atOn.dropped || 0)} dropped, ${(atOff.reordered || 0) - (atOn.reordered || 0)} reordered, ` +
              `max delay ${atOff.max_delay_ms} ms`);
  console.log(`figure: 8 s before the impairment: ${fmt(before)}`);
  console.log(`figure: 15 s impaired (5% loss, 30 ms jitter, 1% reorder): ${fmt(during)}`);
  console.log(`figure: ${afterP.s} s after it: ${fmt(afterP)}`);
  // Recovery: the first second after the impairment at full rate, with no decode error and no
  // fail-closed frame, counted from the end of the impairment.
  // Full rate: 28 fps, or 95% of the 8 s before the impairment where the publisher sent less,
  // or what the browser sent in that second less 3 frames (in flight: the two counts are read
  // a few ms apart) where its own adaptation, after the loss, sends less still (CI 2026-12-06:
  // 22.6 fps from the browser in the 7 s after it, 22.3 out of veil). veil cannot send frames
  // it was not given; a second in which the browser sent under 15 does not count.
  const fullRate = Math.min(28, 0.95 * before.fps_out);
  let recovery = -1, recoveredAt = "";
  for (const p of perSecond.filter(p => p.t > IMPAIR_TO)) {
    const q = perSecond.find(x => x.t === p.t - 1);
    const sent = p.sent - q.sent, outN = p.out - q.out;
    if (sent >= 15 && outN >= Math.min(fullRate, sent - 3) && p.decode_errors === q.decode_errors &&
        p.fail_closed === q.fail_closed) {
      recovery = p.t - IMPAIR_TO;
      recoveredAt = `${outN} frames out, ${sent} sent by the browser`;
      break;
    }
  }
  console.log(`figure: recovery after the impairment: ${recovery} s to the first clean second at >= ${fullRate.toFixed(1)} fps ` +
              `or the browser's own rate (${recoveredAt})`);

  // --- Checks ---
  check(!events.some(e => e.type === "session_error" || e.type === "session_ended"),
        `the session ran ${SECONDS} s without an error (${events.map(e => e.type).join(", ")})`);
  check((await api(url, "GET", "/v1/sessions/ey")).status === 200, "the session is still live");
  const changes = sizes.length - 1;
  check(changes >= STEPS.length, `the viewer saw ${changes} size changes (>= the ${STEPS.length} forced ones)`);
  check(stats.resolution_changes >= changes, `veil counted ${stats.resolution_changes} encoder re-opens for ${changes} changes`);
  for (let i = 1; i < sizes.length; ++i) {
    const prev = sizes[i - 1], cur = sizes[i];
    check(cur.kf > prev.kf, `change ${i} (${prev.w}x${prev.h} -> ${cur.w}x${cur.h}) was decoded at a keyframe ` +
                            `(keyframes ${prev.kf} -> ${cur.kf})`);
    // The watch page refreshes its stats once a second: a size the browser held for less than
    // 3 s (its own adaptation steps through sizes quickly) is checked for its keyframe only.
    const next = i + 1 < sizes.length ? sizes[i + 1].at : IMPAIR_FROM;
    if (next - cur.at < 3) continue;
    const during = samples.filter(x => x[0] >= cur.at && x[0] < next);
    const decoded = during.length ? during[during.length - 1][4] - cur.dec : 0;
    checkTiming(decoded >= 10 * (next - cur.at - 2), `and the viewer decoded ${decoded} frames at ${cur.w}x${cur.h} in ` +
                                               `${(next - cur.at).toFixed(1)} s`);
  }
  // Decode stalls: the longest time frames_decoded stood still, before and during the impairment.
  const stall = (from, to) => {
    let worst = 0;
    const xs = samples.filter(x => x[0] >= from && x[0] < to);
    for (let i = 0, j = 0; i < xs.length; ++i) {
      while (j < i && xs[i][4] > xs[j][4]) ++j;
      if (xs[i][4] === xs[j][4]) worst = Math.max(worst, xs[i][0] - xs[j][0]);
    }
    return worst;
  };
  const stallBefore = stall(0, IMPAIR_FROM), stallDuring = stall(IMPAIR_FROM, SECONDS);
  console.log(`figure: the viewer's longest decode stall: ${stallBefore.toFixed(1)} s before the impairment, ` +
              `${stallDuring.toFixed(1)} s from its start to the end`);
  checkTiming(stallBefore < 2, `across the size changes the viewer never stopped decoding for 2 s (${stallBefore.toFixed(1)} s)`);
  // Under 5% loss a lost keyframe can hold the decoder for about a second while the PLI's
  // keyframe comes back (CI, 2026-12-02: one second with none, at full machine speed); two in a
  // row would be a stall the viewer sees.
  checkTiming(during.max_silent <= 1, `veil never went two seconds in a row without sending a frame during the impairment ` +
              `(longest run ${during.max_silent} s, worst second ${during.min_out})`);
  checkTiming(during.fps_out >= MIN_IMPAIRED_SHARE * before.fps_out,
        `under impairment veil sent ${during.fps_out.toFixed(1)} fps, ${(during.fps_out / before.fps_out).toFixed(2)} of the ` +
        `${before.fps_out.toFixed(1)} before it (>= ${MIN_IMPAIRED_SHARE})`);
  checkTiming(before.fps_out >= 15, `before the impairment veil sent >= 15 fps, enough for the rate checks to mean something ` +
                              `(${before.fps_out.toFixed(1)})`);
  checkTiming(recovery >= 0, `full rate with no decode error within ${SECONDS - 1 - IMPAIR_TO} s of the impairment's end (${recovery} s)`);

  const tally = tallyGroundTruth(judgeGroundTruth(captures, CAMERA_FRAMES));
  for (const l of tally.lines) console.log("leak: " + l);
  const facesJudged = tally.judged, leaked = tally.visible, clearLeaked = tally.clearVisible;
  const nImpaired = captures.filter(p => p.includes("/impaired-")).length;
  console.log(`figure: ground truth, ${captures.length} viewer frames (${captures.length - nImpaired} right after the ` +
              `${changes} size changes, ${nImpaired} under impairment): ${facesJudged} faces judged, ${leaked} leaked ` +
              `(${clearLeaked} clear)`);
  check(facesJudged >= captures.length, `faces were judged in the captured frames (${facesJudged})`);
  check(clearLeaked === 0, "no clear face shows after a resolution change or under impairment");

  // The judge can fail: in bypass the same viewer shows the faces.
  // The judge above blocks this process for seconds (execFileSync): a kept-alive socket the
  // server closed meanwhile can fail on reuse (CI: "fetch failed" here, and on 2026-12-06 on a
  // second try through the same pool too). So the PUT goes on a connection of its own; a server
  // that died fails the test with its exit and log.
  let put;
  try {
    put = await apiFresh(url, "PUT", "/v1/sessions/ey/privacy", { mode: "bypass" });
  } catch (e) {
    throw new Error(`the PUT failed (${e.code || e.message}); server exit ${server.proc.exitCode} ` +
                    `${server.proc.signalCode}: ` + server.log().slice(-2000));
  }
  check(put.status === 200, "switched to bypass for the control");
  await sleep(1500);
  // Six frames 300 ms apart: the camera's faces turn and shrink over its 6 s, and the browser's
  // encoding softens small ones (3 frames once showed only 1 visible face: a flaky control).
  const control = [];
  for (let i = 0; i < 6; ++i) {
    const d = await watch.evaluate(() => window.veilWatch.capture());
    control.push(`${frames}/bypass-${i}.png`);
    writeFileSync(control[i], Buffer.from(d.split(",")[1], "base64"));
    await sleep(300);
  }
  const controlJudged = judgeGroundTruth(control, CAMERA_FRAMES);
  const shown = controlJudged.reduce((n, im) => n + im.leaked, 0);
  const judgedInControl = controlJudged.reduce((n, im) => n + im.faces, 0);
  check(shown >= 2, `in bypass the judge sees the faces (${shown} of ${judgedInControl} visible in ${control.length} frames)`);

  // --- The client ends its resource with DELETE ---
  await pub.evaluate(() => window.pub.client.destroy());
  await sleep(1500);
  const after = (await apiFresh(url, "GET", "/v1/sessions/ey")).body;  // after a judge: a fresh connection
  check(!after.publisher, "the client's DELETE detached the publisher");
  check(errors.length === 0, "no page errors: " + errors.join(" | "));
  await cleanup();
  site.srv.close();
  console.log("PASS");
}

run(main);
