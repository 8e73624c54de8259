// The operator page in a real browser (Debian's headless chromium driven by
// playwright-core): a live RTP session of the clip with faces, the page lists
// it with live figures, and its "full blur" button switches the session's
// privacy mode through the API (audited as the page's doing) within a second.
// Screenshots go to $VEIL_SCREENSHOTS. Loopback only: the browser resolves
// no host name and the page talks only to the server that served it.
// Env: VEIL_BIN (veil binary), VEIL_TEST_MEDIA (generated media), VEIL_SCREENSHOTS, CHROMIUM (default /usr/bin/chromium).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { chromium } from "playwright-core";

const bin = process.env.VEIL_BIN;
const media = process.env.VEIL_TEST_MEDIA;
const shots = process.env.VEIL_SCREENSHOTS || "screenshots";
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const children = [];
let browser;

function fail(msg) {
  console.error("FAIL: " + msg);
  cleanup().finally(() => process.exit(1));
}
async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
}
function check(cond, msg) {
  if (!cond) throw new Error(msg);
  console.log("ok: " + msg);
}

// Starts `veil serve` on a free loopback port and resolves to its URL.
function startServer(extra = []) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ["serve", "--listen", "127.0.0.1:0", ...extra], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(p);
    let out = "", err = "";
    p.stdout.on("data", d => {
      out += d;
      const m = out.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) resolve(m[1]);
    });
    p.stderr.on("data", d => (err += d));
    p.on("exit", code => reject(new Error("veil serve exited " + code + ": " + err)));
    setTimeout(() => reject(new Error("veil serve did not start")), 30000);
  });
}

async function api(url, method, path, body) {
  const r = await fetch(url + path, {
    method, headers: body ? { "Content-Type": "application/json" } : {}, body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: r.status === 204 ? {} : await r.json() };
}

async function main() {
  for (const [what, path] of [["VEIL_BIN", bin], ["VEIL_TEST_MEDIA", media], ["chromium", browserPath]])
    if (!path || !existsSync(path)) return fail(`${what} not found (${path}): run ./scripts/install-deps.sh and build first`);
  mkdirSync(shots, { recursive: true });
  const url = await startServer();
  console.log("veil serve on " + url);
  // A live session: the 720p30 VP8 clip with faces as paced RTP, and one recording-free viewer.
  const pub = spawn(bin, ["publish", "--server", url, "-i", media + "/sample_720p30.ivf", "--session", "web", "--seconds", "30"],
                    { stdio: "ignore" });
  children.push(pub);
  const view = spawn(bin, ["view", "--server", url, "--session", "web", "--seconds", "30", "--wait", "10"], { stdio: "ignore" });
  children.push(view);

  browser = await chromium.launch({
    executablePath: browserPath,
    headless: true,
    args: [
      "--no-sandbox", "--disable-gpu", "--headless=new",
      "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-default-apps", "--no-first-run", "--disable-domain-reliability",
      "--disable-features=WebRtcHideLocalIpsWithMdns,MediaRouter,OptimizationHints,Translate",
    ],
  });
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
  const secured = await startServer(["--token", token]);
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

main().catch(e => fail(e.stack || String(e)));
