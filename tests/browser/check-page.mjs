// Opens an HTML file from file:// in headless Chromium and reports, as one JSON line:
// console errors, page errors, every network request that is not the file itself, and for
// each <canvas> whether it has drawn pixels; and its layout (layout.mjs) loaded at 1400 px and
// at 390 px (a phone), with a screenshot of each (SCREENSHOT, and SCREENSHOT-phone.png).
//
//   node check-page.mjs PAGE.html SCREENSHOT.png
//
// Chromium is Debian's (/usr/bin/chromium, or $CHROMIUM); playwright-core drives it.
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";
import { layout } from "./layout.mjs";

// The layout of a page as loaded, and its screenshot.
async function layout_and_shot(page, path) {
  const l = await layout(page);
  await page.screenshot({ path, fullPage: true });
  return l;
}

const [page_path, shot] = process.argv.slice(2);
if (!page_path || !shot) {
  console.error("usage: node check-page.mjs PAGE.html SCREENSHOT.png");
  process.exit(2);
}
const url = pathToFileURL(page_path).href;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const out = { console_errors: [], page_errors: [], requests: [], canvases: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("console", (m) => { if (m.type() === "error") out.console_errors.push(m.text()); });
  page.on("pageerror", (e) => out.page_errors.push(String(e)));
  page.on("request", (r) => { if (r.url() !== url) out.requests.push(r.url()); });
  await page.goto(url, { waitUntil: "load" });
  await page.waitForTimeout(500);
  out.canvases = await page.evaluate(() =>
    [...document.querySelectorAll("canvas")].map((c) => {
      const holder = c.closest("[id]");
      let drawn = 0;
      try {
        const ctx = c.getContext("2d");
        const d = ctx.getImageData(0, 0, c.width, c.height).data;
        for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) drawn++;
      } catch (e) { drawn = -1; }
      return { id: holder ? holder.id : "", width: c.width, height: c.height, drawn };
    }));
  out.title = await page.title();
  // Charts are sized when drawn: the layout is read on a page loaded at each width.
  out.layout = {};
  for (const [name, width] of [["desktop", 1400], ["phone", 390]]) {
    const p = await browser.newPage({ viewport: { width, height: 900 } });
    await p.goto(url, { waitUntil: "load" });
    await p.waitForTimeout(300);
    const path = name === "desktop" ? shot : shot.replace(/\.png$/, "-phone.png");
    out.layout[name] = await layout_and_shot(p, path);
    await p.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
