// Browser-origin safety in a real browser (issue 13): a page of another origin
// (here http://127.0.0.1:<another port>, served by this test) tries what any
// web page could try against a veil server on the viewer's machine: create a
// session and switch one to bypass, with simple (no-preflight) fetches,
// preflighted JSON fetches, DELETE, and a form post. Nothing may change.
// The same requests from the server's own operator page still work.
// Env: VEIL_BIN, CHROMIUM (default /usr/bin/chromium).
import { createServer } from "node:http";
import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { api, bin, browserPath, check, cleanup, launchBrowser, run, startServer } from "./harness.mjs";

const attackPage = target => `<!doctype html><html><body>
<form id="f" method="POST" action="${target}/v1/sessions" enctype="text/plain" target="sink">
  <input name='{"id":"evil-form","x":"' value='"}'></form>
<iframe name="sink"></iframe>
<script>
const target = ${JSON.stringify(target)};
window.results = {};
const tries = {
  create_simple: () => fetch(target + "/v1/sessions", { method: "POST", mode: "no-cors",
    headers: { "Content-Type": "text/plain" }, body: '{"id":"evil-simple"}' }),
  create_json: () => fetch(target + "/v1/sessions", { method: "POST",
    headers: { "Content-Type": "application/json" }, body: '{"id":"evil-json"}' }),
  create_empty: () => fetch(target + "/v1/sessions", { method: "POST", mode: "no-cors" }),
  bypass_simple: () => fetch(target + "/v1/sessions/s1/privacy", { method: "POST", mode: "no-cors",
    headers: { "Content-Type": "text/plain" }, body: '{"mode":"bypass"}' }),
  bypass_put: () => fetch(target + "/v1/sessions/s1/privacy", { method: "PUT",
    headers: { "Content-Type": "application/json" }, body: '{"mode":"bypass"}' }),
  delete: () => fetch(target + "/v1/sessions/s1", { method: "DELETE" }),
  read: () => fetch(target + "/v1/sessions").then(r => r.json()),
};
(async () => {
  for (const [k, fn] of Object.entries(tries)) {
    try { const r = await fn(); window.results[k] = "answered: " + (r.type || JSON.stringify(r).slice(0, 40)); }
    catch (e) { window.results[k] = "blocked: " + e.message; }
  }
  document.getElementById("f").submit();
  await new Promise(r => setTimeout(r, 1000));
  window.done = true;
})();
</script></body></html>`;

async function main() {
  for (const [what, path] of [["VEIL_BIN", bin], ["chromium", browserPath]])
    if (!path || !existsSync(path)) throw new Error(`${what} not found (${path})`);
  const { url } = await startServer();
  check((await api(url, "POST", "/v1/sessions", { id: "s1" })).status === 201, "a session to attack");
  const requests = [];
  const site = createServer((req, res) => {
    requests.push(req.url);
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end(attackPage(url));
  });
  await new Promise(r => site.listen(0, "127.0.0.1", r));
  const other = `http://127.0.0.1:${site.address().port}`;
  const browser = await launchBrowser();
  const page = await browser.newPage();
  await page.goto(other + "/");
  await page.waitForFunction(() => window.done === true, null, { timeout: 20000 });
  const results = await page.evaluate(() => window.results);
  console.log("figure: the other origin's attempts: " + JSON.stringify(results));
  await sleep(500);
  const list = (await api(url, "GET", "/v1/sessions")).body.sessions;
  check(list.length === 1 && list[0].id === "s1", "a page of another origin created no session: " + list.map(s => s.id).join(","));
  check(list[0].mode === "anonymize", "and did not switch the session's privacy mode (" + list[0].mode + ")");
  check(results.read.startsWith("blocked"), "nor could it read the session list: " + results.read);
  const ev = (await api(url, "GET", "/v1/events")).body.events.map(e => e.type);
  check(!ev.includes("mode_changed") && !ev.includes("session_ended"), "no state change in the event log: " + ev.join(","));

  // The server's own operator page (same origin) still switches modes.
  const own = await browser.newPage();
  await own.goto(url + "/operator");
  const row = own.locator('tr[data-session="s1"]');
  await row.waitFor({ timeout: 10000 });
  await row.locator('button[data-mode="bypass"]').click();
  await own.locator('tr[data-session="s1"] td.mode.bypass').waitFor({ timeout: 5000 });
  check((await api(url, "GET", "/v1/sessions/s1")).body.mode === "bypass", "the server's own page still switches the mode");
  site.close();
  await cleanup();
  console.log("PASS");
}

run(main);
