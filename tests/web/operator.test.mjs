// The operator page in a real browser (Debian's headless chromium driven by
// playwright-core). A live RTP session of a clip rendered from annotated photos
// by the independent instrument ../shared/tools/leakcheck (exact face boxes in
// every frame) and:
// - the multiview: the session's thumbnail (its outgoing picture) appears
//   within 2 s of the session's first frame and changes over time; in
//   anonymize no thumbnail leaves an annotated face visible, judged against the
//   lossless master (tests/tools/snapshot_faces.py, leakcheck's criterion, no
//   detector); in bypass the same check finds the faces (so it can fail);
// - sparklines hold the server's whole history window (shortened here to 15 s
//   of 250-ms points; 5 min of 1-s points by default) and never more;
// - a click on the thumbnail opens the watch link, which plays without a click
//   (muted), and unmutes on its button;
// - the table lists the session with live figures, and its "full blur" button
//   switches the session's privacy mode through the API (audited as the page's
//   doing) within a second;
// - a server that wants a token: the page asks for it and then works.
// Screenshots and the thumbnails go to $VEIL_SCREENSHOTS. Loopback only: the
// browser resolves no host name and the page talks only to the server that served it.
// Env: VEIL_BIN, VEIL_TEST_MEDIA, VEIL_ASSETS (or VEIL_LEAKCHECK), VEIL_SOURCE_DIR,
// VEIL_SCREENSHOTS, CHROMIUM (default /usr/bin/chromium).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { api, bin, browserPath, check, cleanup, launchBrowser, media, run, shots, spawnChild, startServer } from "./harness.mjs";

const clip = media + "/leakcheck";
const leakcheck = process.env.VEIL_LEAKCHECK || (process.env.VEIL_ASSETS || "") + "/../tools/leakcheck";
const judge = (process.env.VEIL_SOURCE_DIR || new URL("../..", import.meta.url).pathname) + "/tests/tools/snapshot_faces.py";
const HISTORY_S = 15, HISTORY_INTERVAL_MS = 250, HISTORY_POINTS = (HISTORY_S * 1000) / HISTORY_INTERVAL_MS;

// The thumbnail the page shows now, as the page decoded it: PNG bytes and what the server said of it.
async function thumbnail(page, id) {
  return page.evaluate(id => {
    const img = document.querySelector(`.card[data-session="${id}"] img.thumb`);
    if (!img || img.hidden || !img.naturalWidth) return null;
    const c = document.createElement("canvas");
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    c.getContext("2d").drawImage(img, 0, 0);
    return { png: c.toDataURL("image/png"), meta: window.veilOperator.thumbs[id] };
  }, id);
}

// The next n thumbnails the page shows (each a newer frame than the one before; a thumbnail
// that does not change within 3 s is an error), saved as PNG files for the judge.
async function collect(page, id, label, n, dir) {
  const out = [];
  let last = -1, t = Date.now();
  while (out.length < n) {
    const th = await thumbnail(page, id);
    if (th && th.meta.frame !== last) {
      const file = `${dir}/${label}-${String(out.length).padStart(2, "0")}.png`;
      writeFileSync(file, Buffer.from(th.png.split(",")[1], "base64"));
      out.push({ file, png: th.png, gap_ms: Date.now() - t, ...th.meta });
      last = th.meta.frame;
      t = Date.now();
    } else if (Date.now() - t > 3000) {
      throw new Error(`the ${label} thumbnail did not change for 3 s (frame ${last})`);
    }
    await sleep(50);
  }
  return out;
}

async function waitUntil(what, fn, timeoutMs = 10000, stepMs = 50) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error("timed out waiting for " + what);
    await sleep(stepMs);
  }
}

async function main() {
  for (const [what, path] of [["VEIL_BIN", bin], ["VEIL_TEST_MEDIA", media], ["chromium", browserPath],
                              ["the leakcheck clip", clip + "/master.mkv"], ["leakcheck", leakcheck + "/score.py"],
                              ["the judge", judge]])
    if (!path || !existsSync(path)) throw new Error(`${what} not found (${path}): run ./scripts/install-deps.sh and build first`);
  mkdirSync(shots, { recursive: true });
  const thumbs = shots + "/thumbnails";
  rmSync(thumbs, { recursive: true, force: true });
  mkdirSync(thumbs, { recursive: true });
  // --shed false: on a slow 2-core machine one 720p session beside headless Chromium overloads the
  // node, and shedding then refuses new viewers (503: the watch link never played, twice in one
  // CI run). Shedding is server_test's subject; this test's is the page.
  const { url } = await startServer(["--history-s", String(HISTORY_S), "--history-interval-ms", String(HISTORY_INTERVAL_MS),
                                     "--set", "inference.fault_injection=true", "--shed", "false"]);
  console.log("veil serve on " + url);

  const browser = await launchBrowser(["--allow-loopback-in-peer-connection", "--autoplay-policy=document-user-activation-required"]);
  const context = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
  const page = await context.newPage();
  const offsite = [];
  const errors = [];
  context.on("request", r => { if (!r.url().startsWith(url) && !r.url().startsWith("blob:") && !r.url().startsWith("data:")) offsite.push(r.url()); });
  page.on("pageerror", e => errors.push(String(e)));
  await page.goto(url + "/");  // redirects to /operator
  check(page.url() === url + "/operator", "/ opens the operator page");

  // A live session: the leakcheck clip as paced RTP (looping), and one RTP viewer.
  spawnChild(["publish", "--server", url, "-i", clip + "/input.ivf", "--session", "web", "--seconds", "90"]);
  spawnChild(["view", "--server", url, "--session", "web", "--seconds", "90", "--wait", "10"]);
  const tFirst = await waitUntil("the session's first frame", async () => {
    const r = await api(url, "GET", "/v1/sessions/web/stats");
    return r.status === 200 && r.body.frames_sent > 0 ? Date.now() : 0;
  }, 20000, 25);
  const tThumb = await waitUntil("the first thumbnail",
    async () => ((await page.evaluate(() => !!window.veilOperator.thumbs.web)) ? Date.now() : 0), 10000, 25);
  console.log(`figure: thumbnail shown ${tThumb - tFirst} ms after the session's first frame left the server`);
  check(tThumb - tFirst < 2000, `the thumbnail appears within 2 s of the session's first frame (${tThumb - tFirst} ms)`);

  // Anonymize: thumbnails over most of the 12-s clip (a crowd, then three close-ups).
  const anon = await collect(page, "web", "anonymize", 12, thumbs);
  check(anon.every(t => t.mode === "anonymize" && t.width <= 480 && t.width >= 400),
        `${anon.length} thumbnails in anonymize, at most 480 px wide (${anon[0] && anon[0].width}x${anon[0] && anon[0].height})`);
  const distinct = new Set(anon.map(t => t.png)).size;
  const gaps = anon.slice(1).map(t => t.gap_ms);
  check(distinct === anon.length && Math.max(...gaps) < 2500,
        `the thumbnail changes over time: ${distinct} distinct pictures of frames ${anon[0].frame}..${anon[anon.length - 1].frame}, ` +
        `a new one every ${Math.min(...gaps)}-${Math.max(...gaps)} ms`);
  await page.screenshot({ path: shots + "/operator.png", fullPage: true });

  // Bypass (from the page's button): the faces are visible in the thumbnails.
  const row = page.locator('tr[data-session="web"]');
  await row.locator('button[data-mode="bypass"]').click();
  await waitUntil("a bypass thumbnail", () => page.evaluate(() => window.veilOperator.thumbs.web.mode === "bypass"), 5000);
  const bypass = await collect(page, "web", "bypass", 6, thumbs);
  await page.screenshot({ path: shots + "/operator-bypass.png", fullPage: true });
  await row.locator('button[data-mode="anonymize"]').click();
  await waitUntil("an anonymize thumbnail", () => page.evaluate(() => window.veilOperator.thumbs.web.mode === "anonymize"), 5000);

  // Fail-closed (the detector stalls): the thumbnail shows the whole-frame mosaic it is, with its badge.
  check((await api(url, "PUT", "/v1/debug/inference", { stall: true })).status === 200, "detection stalled");
  await waitUntil("a fail-closed thumbnail", () => page.evaluate(() => window.veilOperator.thumbs.web.fail_closed), 5000);
  check(await page.locator('.card[data-session="web"] .badge.fail-closed').isVisible(), "the fail-closed badge shows");
  const failClosed = (await collect(page, "web", "failclosed", 3, thumbs)).filter(t => t.fail_closed);
  await page.screenshot({ path: shots + "/operator-fail-closed.png", fullPage: true });
  await api(url, "PUT", "/v1/debug/inference", { stall: false });
  await waitUntil("detection back", () => page.evaluate(() => !window.veilOperator.thumbs.web.fail_closed), 15000);
  check(failClosed.length >= 2, `${failClosed.length} fail-closed thumbnails kept; detection back, badge gone`);
  // The history now, while the stall is inside its 15-s window: the judge below can take longer
  // than that on a busy machine (a CI on 2026-12-04 read the series after the stall had left it).
  const stallHistory = (await api(url, "GET", "/v1/sessions/web/history")).body;

  // The judge: annotated faces in each thumbnail against the lossless master (no detector).
  const verdict = JSON.parse(execFileSync("/usr/bin/python3", [judge, clip, ...[...anon, ...bypass, ...failClosed].map(t => t.file),
                                                               "--leakcheck", leakcheck], { encoding: "utf8", maxBuffer: 64 << 20 }));
  writeFileSync(thumbs + "/verdict.json", JSON.stringify(verdict, null, 1));
  const tally = label => {
    const ims = verdict.images.filter(i => i.image.includes("/" + label + "-"));
    return { images: ims.length, faces: ims.reduce((n, i) => n + i.faces, 0), leaked: ims.reduce((n, i) => n + i.leaked, 0),
             ssim_max: Math.max(0, ...ims.flatMap(i => i.detail.map(f => f.ssim_half))),
             ssim_min: Math.min(1, ...ims.flatMap(i => i.detail.map(f => f.ssim_half))) };
  };
  const a = tally("anonymize"), b = tally("bypass"), fc = tally("failclosed");
  console.log(`figure: anonymize thumbnails ${a.images}, faces judged ${a.faces}, leaked ${a.leaked}, best-half SSIM max ${a.ssim_max.toFixed(3)}`);
  console.log(`figure: bypass thumbnails ${b.images}, faces judged ${b.faces}, leaked ${b.leaked}, best-half SSIM min ${b.ssim_min.toFixed(3)}`);
  console.log(`figure: fail-closed thumbnails ${fc.images}, faces judged ${fc.faces}, leaked ${fc.leaked}, best-half SSIM max ${fc.ssim_max.toFixed(3)}`);
  check(fc.leaked === 0, `no fail-closed thumbnail shows an annotated face (${fc.leaked} of ${fc.faces})`);
  check(a.faces >= 10, `the anonymize thumbnails hold annotated faces to judge (${a.faces})`);
  check(a.leaked === 0, `no anonymize thumbnail shows an annotated face (${a.leaked} of ${a.faces} leaked, SSIM <= ${a.ssim_max.toFixed(3)} < ${verdict.t_ssim})`);
  check(b.faces >= 5 && b.leaked >= 0.9 * b.faces,
        `in bypass the same check finds the faces: ${b.leaked} of ${b.faces} visible (it can fail)`);

  // The table's live figures, and the history: the sparklines hold the whole window and no more.
  let fps = 0;
  for (let i = 0; i < 30 && fps < 20; ++i) {
    await sleep(500);
    fps = parseFloat(await row.locator("td").nth(5).textContent());
  }
  check(fps >= 20, `the page shows the session's received fps (${fps})`);
  check((await row.locator("td").nth(2).textContent()) === "anonymize", "mode anonymize shown");
  check((await row.locator("td").nth(4).textContent()) === "local", "AI target shown");
  check((await page.locator("#targets tbody tr").count()) === 1, "the AI targets table lists the in-process target");
  const hist = await waitUntil("a full history window", async () => {
    const h = (await api(url, "GET", "/v1/sessions/web/history")).body;
    return h.points >= HISTORY_POINTS ? h : null;
  }, 30000, 250);
  await sleep(1500);  // two more refreshes of the page
  const h2 = (await api(url, "GET", "/v1/sessions/web/history")).body;
  check(hist.points === HISTORY_POINTS && h2.points === HISTORY_POINTS && h2.window_s === HISTORY_S,
        `the server keeps a bounded history: ${h2.points} points of ${h2.interval_ms} ms (window ${h2.window_s} s)`);
  const meanFps = h2.received_fps.reduce((x, y) => x + y, 0) / h2.points;
  check(meanFps > 20 && h2.fail_closed_per_s.length === HISTORY_POINTS && h2.stale_drops_per_s.length === HISTORY_POINTS &&
        h2.processing_p99_ms.filter(v => v !== null && v > 0).length > HISTORY_POINTS / 2,
        `the history holds received fps (mean ${meanFps.toFixed(1)}), p99, fail-closed and stale series`);
  check(stallHistory.fail_closed_per_s.some(v => v >= 5),
        `the stall shows in the fail-closed series (max ${Math.max(...stallHistory.fail_closed_per_s).toFixed(1)}/s)`);
  const sparks = await page.evaluate(() => {
    const card = document.querySelector('.card[data-session="web"]');
    const out = {};
    for (const svg of card.querySelectorAll("svg[data-series]"))
      out[svg.dataset.series] = svg.querySelector("polyline").getAttribute("points").trim().split(/\s+/).filter(Boolean).length;
    return { drawn: out, hook: window.veilOperator.sparks.web };
  });
  check(sparks.hook.capacity === HISTORY_POINTS && Object.values(sparks.hook.counts).every(n => n === HISTORY_POINTS) &&
        sparks.drawn.received_fps === HISTORY_POINTS && sparks.drawn.fail_closed_per_s === HISTORY_POINTS,
        `the sparklines hold the whole window: ${JSON.stringify(sparks.drawn)} points of ${sparks.hook.capacity}`);
  await page.screenshot({ path: shots + "/operator-sparklines.png", fullPage: true });

  // A click on the thumbnail opens the watch link; it plays without a click, muted, and unmutes.
  const [watch] = await Promise.all([context.waitForEvent("page"), page.click('.card[data-session="web"] a.thumb-link')]);
  watch.on("pageerror", e => errors.push("watch: " + String(e)));
  await watch.waitForLoadState();
  check(watch.url() === url + "/watch?session=web", "the thumbnail opens the session's watch link: " + watch.url());
  // Up to 30 s for a slow 2-core machine. On a timeout the watch page's own state is printed (that
  // is how the 503 from load shedding above was found).
  try {
    await waitUntil("the watch link to play", () => watch.evaluate(() =>
      window.veilWatch.playing && window.veilWatch.stats.frames_decoded > 10), 30000, 100);
  } catch (e) {
    const st = await watch.evaluate(() => JSON.stringify({ state: window.veilWatch.state, error: window.veilWatch.error, playing: window.veilWatch.playing,
                                                           stats: window.veilWatch.stats })).catch(x => String(x));
    throw new Error(`${e.message}: the watch page says ${st}; page errors: ${errors.join("; ") || "none"}`);
  }
  const ws = await watch.evaluate(() => ({ muted: window.veilWatch.muted, st: window.veilWatch.stats }));
  check(ws.muted, `the watch link plays without a click, muted (${ws.st.frames_decoded} frames decoded, ${ws.st.resolution})`);
  await watch.screenshot({ path: shots + "/watch-link.png" });
  await watch.click("#unmute");
  check(!(await watch.evaluate(() => window.veilWatch.muted)), "the unmute button unmutes");
  await watch.click("#stop");
  await watch.close();

  // Switch to full blur from the page: the server applies it within a second and records who did it.
  const t0 = Date.now();
  await row.locator('button[data-mode="full_blur"]').click();
  let mode = "";
  while (Date.now() - t0 < 1000) {
    mode = (await api(url, "GET", "/v1/sessions/web")).body.mode;
    if (mode === "full_blur") break;
    await sleep(20);
  }
  check(mode === "full_blur", `the button switched the session to full_blur in ${Date.now() - t0} ms`);
  await page.locator('tr[data-session="web"] td.mode.full_blur').waitFor({ timeout: 3000 });
  await waitUntil("a full_blur thumbnail", () => page.evaluate(() => window.veilOperator.thumbs.web.mode === "full_blur"), 5000);
  check(true, "the page shows the new mode, in the table and on the thumbnail's badge");
  const ev = (await api(url, "GET", "/v1/events")).body.events.filter(e => e.type === "mode_changed");
  const details = ev.map(e => e.detail);
  check(ev.length === 3 && details.every(d => d.includes("by operator-page")) && details[2].includes("anonymize -> full_blur"),
        "the switches are audited as the operator page's: " + details.join("; "));
  await page.locator("#events div").first().waitFor({ timeout: 3000 });
  await page.screenshot({ path: shots + "/operator-full-blur.png", fullPage: true });

  // Bad requests for the new routes get clear errors.
  for (const [path, want] of [["/v1/sessions/web/snapshot.jpg?width=5", 400], ["/v1/sessions/web/snapshot.jpg?width=abc", 400],
                              ["/v1/sessions/nope/snapshot.jpg", 404], ["/v1/sessions/nope/history", 404]]) {
    const r = await fetch(url + path);
    check(r.status === want, `${path} -> ${r.status}`);
  }
  check(errors.length === 0, "no script errors on the pages " + errors.join("; "));
  check(offsite.length === 0, "the pages made no request beyond their server " + offsite.join(" "));

  // A server that wants a token: the page loads without one, asks for it, and works once given;
  // the snapshot is protected like the rest of the API.
  const token = "operator-test-token-0123456789";
  const secured = (await startServer(["--token", token])).url;
  check((await fetch(secured + "/v1/sessions")).status === 401, "the API refuses a call without the token");
  check((await fetch(secured + "/v1/sessions/any/snapshot.jpg")).status === 401, "so does the snapshot");
  check((await fetch(secured + "/v1/sessions/any/history")).status === 401, "and the history");
  const p2 = await context.newPage();
  await p2.goto(secured + "/operator");
  await p2.locator("#auth").waitFor({ state: "visible", timeout: 5000 });
  check(true, "the page asks for the token");
  await p2.fill("#token", token);
  await p2.click("#save-token");
  await p2.waitForFunction(() => document.getElementById("status").textContent.includes("session(s)"), null,
                           { timeout: 5000 });
  check((await p2.locator("#targets tbody tr").count()) === 1, "with the token the page reads the API");
  await cleanup();
  console.log("PASS: screenshots and thumbnails in " + shots);
}

run(main);
