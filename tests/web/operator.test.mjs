// The operator page in a real browser (Debian's headless chromium driven by
// playwright-core): a live RTP session of the clip with faces, the page lists
// it with live figures, and its "full blur" button switches the session's
// privacy mode through the API (audited as the page's doing) within a second.
// Screenshots go to $VEIL_SCREENSHOTS. Loopback only: the browser resolves
// no host name and the page talks only to the server that served it.
// Env: VEIL_BIN (veil binary), VEIL_TEST_MEDIA (generated media), VEIL_SCREENSHOTS, CHROMIUM (default /usr/bin/chromium).
import { existsSync, mkdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { api, bin, browserPath, check, cleanup, launchBrowser, media, run, shots, spawnChild, startServer } from "./harness.mjs";

async function main() {
  for (const [what, path] of [["VEIL_BIN", bin], ["VEIL_TEST_MEDIA", media], ["chromium", browserPath]])
    if (!path || !existsSync(path)) throw new Error(`${what} not found (${path}): run ./scripts/install-deps.sh and build first`);
  mkdirSync(shots, { recursive: true });
  const { url } = await startServer();
  console.log("veil serve on " + url);
  // A live session: the 720p30 VP8 clip with faces as paced RTP, and one recording-free viewer.
  spawnChild(["publish", "--server", url, "-i", media + "/sample_720p30.ivf", "--session", "web", "--seconds", "30"]);
  spawnChild(["view", "--server", url, "--session", "web", "--seconds", "30", "--wait", "10"]);

  const browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1500, height: 800 } });
  const offsite = [];
  page.on("request", r => { if (!r.url().startsWith(url)) offsite.push(r.url()); });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));

  await page.goto(url + "/");  // redirects to /operator
  check(page.url() === url + "/operator", "/ opens the operator page");
  const row = page.locator('tr[data-session="web"]');
  await row.waitFor({ timeout: 15000 });
  check(true, "the session appears on the page");
  // Live figures: wait until the page shows the stream at speed.
  let fps = 0;
  for (let i = 0; i < 30 && fps < 20; ++i) {
    await sleep(500);
    fps = parseFloat(await row.locator("td").nth(5).textContent());
  }
  check(fps >= 20, `the page shows the session's received fps (${fps})`);
  check((await row.locator("td").nth(2).textContent()) === "anonymize", "mode anonymize shown");
  check((await row.locator("td").nth(4).textContent()) === "local", "AI target shown");
  check((await page.locator("#targets tbody tr").count()) === 1, "the AI targets table lists the in-process target");
  await page.screenshot({ path: shots + "/operator.png", fullPage: true });

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
  check(true, "the page shows the new mode");
  const ev = (await api(url, "GET", "/v1/events")).body.events.filter(e => e.type === "mode_changed");
  check(ev.length === 1 && ev[0].detail.includes("anonymize -> full_blur by operator-page"),
        "the switch is audited as the operator page's: " + (ev[0] && ev[0].detail));
  await page.locator("#events div").first().waitFor({ timeout: 3000 });
  await page.screenshot({ path: shots + "/operator-full-blur.png", fullPage: true });
  check(errors.length === 0, "no script errors on the page " + errors.join("; "));
  check(offsite.length === 0, "the page made no request beyond its server " + offsite.join(" "));

  // A server that wants a token: the page loads without one, asks for it, and works once given.
  const token = "operator-test-token-0123456789";
  const secured = (await startServer(["--token", token])).url;
  const denied = await fetch(secured + "/v1/sessions");
  check(denied.status === 401, "the API refuses a call without the token");
  const p2 = await browser.newPage();
  await p2.goto(secured + "/operator");
  await p2.locator("#auth").waitFor({ state: "visible", timeout: 5000 });
  check(true, "the page asks for the token");
  await p2.fill("#token", token);
  await p2.click("#save-token");
  await p2.waitForFunction(() => document.getElementById("status").textContent.includes("session(s)"), null,
                           { timeout: 5000 });
  check((await p2.locator("#targets tbody tr").count()) === 1, "with the token the page reads the API");
  await cleanup();
  console.log("PASS: screenshots in " + shots);
}

run(main);
