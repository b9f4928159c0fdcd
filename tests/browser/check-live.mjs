// Watches barrage's live page (--web) in headless Chromium while a run goes, and reports as
// one JSON line: the seconds the page held before and after a reload mid-run, whether every
// chart drew, every request the page made (all must go to the page's own origin), whether the
// CSP refused a script from another origin (on loopback: 127.0.0.2), the seconds the page
// holds once the run ended, and the final summary it shows; its layout (layout.mjs) at 1400 px
// and at a phone's 390 px mid-run. Writes a screenshot of each (SCREENSHOT, SCREENSHOT-phone.png).
//
//   node check-live.mjs http://127.0.0.1:PORT/ SCREENSHOT.png
//
// It writes "ready" on stderr once it has seen the run go on across a reload; then it waits
// (up to 120 s) for the run to end and the page to show the final summary.
import { chromium } from "playwright-core";
import { layout } from "./layout.mjs";

// Whatever hangs (a browser that stops answering: page.evaluate has no timeout of its own),
// the checker ends within 200 s with a line saying so, and the test fails instead of waiting.
setTimeout(() => {
  console.error("check-live: gave up after 200 s");
  process.exit(3);
}, 200000).unref();

const [url, shot] = process.argv.slice(2);
if (!url || !shot) {
  console.error("usage: node check-live.mjs URL SCREENSHOT.png");
  process.exit(2);
}
const origin = new URL(url).origin;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const out = { console_errors: [], page_errors: [], requests: [], csp_violations: [] };
const seconds = (page) => page.evaluate(() => (window.barrageLive ? window.barrageLive.points.length : 0));
async function until(page, what, limit_ms) {
  const t = Date.now();
  while (!(await page.evaluate(what))) {
    if (Date.now() - t > limit_ms) throw new Error("timed out waiting for " + what);
    await page.waitForTimeout(100);
  }
}
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.on("console", (m) => { if (m.type() === "error") out.console_errors.push(m.text()); });
  page.on("pageerror", (e) => out.page_errors.push(String(e)));
  page.on("request", (r) => out.requests.push(r.url()));
  await page.goto(url, { waitUntil: "load" });
  await until(page, "window.barrageLive && window.barrageLive.points.length >= 2", 30000);
  out.before_reload = await seconds(page);
  await page.reload({ waitUntil: "load" });
  // The page comes back with what it had, and goes on.
  await until(page, `window.barrageLive && window.barrageLive.points.length >= ${out.before_reload + 1}`, 30000);
  out.after_reload = await seconds(page);
  out.seconds_shown = await page.evaluate(() => document.getElementById("seconds").textContent);
  // A script from anywhere else is refused by the CSP (127.0.0.2 is loopback, and nothing
  // listens on port 9 there).
  await page.evaluate(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__csp = (window.__csp || []).concat([e.blockedURI]);
    });
    const s = document.createElement("script");
    s.src = "http://127.0.0.2:9/x.js";
    document.body.appendChild(s);
  });
  await page.waitForTimeout(300);
  out.csp_violations = await page.evaluate(() => window.__csp || []);
  out.charts_seen = await page.evaluate(() =>
    [...document.querySelectorAll(".chart-box")].map((b) => ({ id: b.id, hidden: b.hidden, drawn: b.getAttribute("data-drawn") === "true" })));
  // The layout mid-run, at 1400 px and on a phone (390 px, its own page), with screenshots.
  await page.setViewportSize({ width: 1400, height: 1000 });
  const phone = await browser.newPage({ viewport: { width: 390, height: 900 } });
  await phone.goto(url, { waitUntil: "load" });
  await until(phone, `window.barrageLive && window.barrageLive.points.length >= ${out.after_reload}`, 30000);
  await page.reload({ waitUntil: "load" });
  await until(page, `window.barrageLive && window.barrageLive.points.length >= ${out.after_reload}`, 30000);
  await page.waitForTimeout(300);
  out.layout = { desktop: await layout(page), phone: await layout(phone) };
  // What "left" shows, beside the second it was computed from (read together).
  [out.left_shown, out.left_at] = await page.evaluate(() => {
    const load = window.barrageLive.points.filter((p) => p.tick.phase !== "drain");
    return [document.getElementById("left").textContent, load[load.length - 1].tick.t];
  });
  out.p99_shown = await page.evaluate(() => document.getElementById("cur-p99").textContent);
  await phone.screenshot({ path: shot.replace(/\.png$/, "-phone.png"), fullPage: true });
  await phone.close();
  // The caller may end the run now: it waits for this line on stderr.
  process.stderr.write("ready\n");
  await until(page, "window.barrageLive && window.barrageLive.done", 120000);
  out.charts = out.charts_seen;
  out.points = await page.evaluate(() => window.barrageLive.points);
  out.summary = await page.evaluate(() => document.getElementById("summary").textContent);
  out.final_visible = await page.evaluate(() => !document.getElementById("final").hidden);
  // The machine's network per interface (a monitored run): what the page computed, the
  // table's cells, and whether the section shows.
  out.network = await page.evaluate(() => window.barrageLive.network);
  out.network_rows = await page.evaluate(() =>
    [...document.querySelectorAll("#net tr")].map((tr) => [...tr.children].map((td) => td.textContent)));
  out.network_visible = await page.evaluate(() => !document.getElementById("network").hidden);
  await page.screenshot({ path: shot, fullPage: true });
} finally {
  await browser.close();
}
out.foreign_requests = out.requests.filter((r) => !r.startsWith(origin + "/"));
console.log(JSON.stringify(out));
