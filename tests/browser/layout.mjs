// Layout checks of a page as drawn, for check-page.mjs and check-live.mjs:
//   overlaps:  pairs of text boxes (each text node's own box) that overlap;
//   offscreen: text that runs past the right edge of the window with no scrolling box around it;
//   clipped:   chart axis labels that do not fit: a y axis narrower than its widest tick label
//              (uPlot draws on a canvas: measured with the axis's own font), an x axis whose
//              first or last label runs past the canvas;
//   legends:   legend texts still showing uPlot's "--" placeholder.
// Charts are read from window.barragePlots (assets/axes.js).
export async function layout(page) {
  return page.evaluate(() => {
    const out = { overlaps: [], offscreen: [], clipped: [], legends: [] };
    const visible = (el) => {
      for (let e = el; e; e = e.parentElement) {
        if (e.hidden) return false;
        const st = getComputedStyle(e);
        if (st.display === "none" || st.visibility === "hidden") return false;
      }
      return true;
    };
    const scrolls = (el) => {
      for (let e = el.parentElement; e; e = e.parentElement) {
        const ox = getComputedStyle(e).overflowX;
        if (ox === "auto" || ox === "scroll") return true;
      }
      return false;
    };
    const boxes = [];
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!n.textContent.trim() || !visible(n.parentElement)) continue;
      if (n.parentElement.closest("script,style")) continue;
      const r = document.createRange();
      r.selectNodeContents(n);
      for (const b of r.getClientRects()) {
        if (b.width < 1 || b.height < 1) continue;
        boxes.push({ text: n.textContent.trim().slice(0, 40), el: n.parentElement, b });
      }
    }
    const W = window.innerWidth;
    for (const x of boxes) {
      if (x.b.right > W + 1 && !scrolls(x.el)) out.offscreen.push(x.text);
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].b, c = boxes[j].b;
        const w = Math.min(a.right, c.right) - Math.max(a.left, c.left);
        const h = Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top);
        if (w > 1 && h > 1) out.overlaps.push([boxes[i].text, boxes[j].text]);
      }
    }
    const dpr = window.devicePixelRatio || 1;
    for (const u of window.barragePlots || []) {
      if (!visible(u.root)) continue;
      const title = (u.root.querySelector(".u-title") || {}).textContent || "";
      u.axes.forEach((a, i) => {
        if (!a.show || !a._values || !a._values.length) return;
        u.ctx.font = a.font[0];
        const width = (v) => (v == null || v === "" ? 0 : u.ctx.measureText(String(v)).width / dpr);
        if (a.side === 1 || a.side === 3) {
          const widest = Math.max(...a._values.map(width));
          const need = a.ticks.size + a.gap + widest;
          if (a._size + 0.5 < need)
            out.clipped.push({ chart: title, axis: i, size: a._size, need: Math.ceil(need) });
        } else {
          const at = (k) => u.valToPos(a._splits[k], "x") + u.bbox.left / dpr;
          const ends = [0, a._values.length - 1];
          for (const k of ends) {
            const w = width(a._values[k]);
            if (!w) continue;
            const x = at(k);
            if (x - w / 2 < -0.5 || x + w / 2 > u.width + 0.5)
              out.clipped.push({ chart: title, axis: i, label: String(a._values[k]), x: Math.round(x) });
          }
        }
      });
      for (const t of u.root.querySelectorAll(".u-legend td, .u-legend th")) {
        if (t.textContent.trim() === "--") out.legends.push(title);
      }
    }
    return out;
  });
}
