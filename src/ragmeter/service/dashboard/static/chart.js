// Small SVG charts drawn by hand (no chart library): enough for an interval on a 0-1 scale.
const NS = "http://www.w3.org/2000/svg";

function node(name, attrs) {
  const el = document.createElementNS(NS, name);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  return el;
}

/** A mean with its 95% CI on [lo, hi] (default 0-1): a track, the interval, the mean's dot;
 * with `zero`, a mark at 0 (for a difference). */
export function intervalBar({ mean, low, high }, { width = 90, height = 12, lo = 0, hi = 1, zero = false } = {}) {
  const svg = node("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "ci", "aria-hidden": "true" });
  const pad = 3;
  const x = (v) => pad + ((Math.min(Math.max(v, lo), hi) - lo) / (hi - lo || 1)) * (width - 2 * pad);
  const mid = height / 2;
  svg.append(node("line", { x1: pad, x2: width - pad, y1: mid, y2: mid, class: "ci-track" }));
  if (zero) svg.append(node("line", { x1: x(0), x2: x(0), y1: 1, y2: height - 1, class: "ci-zero" }));
  if (low !== null && low !== undefined && high !== null && high !== undefined) {
    svg.append(node("rect", { x: x(low), y: mid - 3, width: Math.max(x(high) - x(low), 1), height: 6, rx: 2, class: "ci-range" }));
  }
  if (mean !== null && mean !== undefined) {
    svg.append(node("circle", { cx: x(mean), cy: mid, r: 3.5, class: "ci-mean" }));
  }
  return svg;
}

/** A progress bar for `done` of `total`. */
export function progressBar(done, total, { width = 90, height = 6 } = {}) {
  const svg = node("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "progress", "aria-hidden": "true" });
  svg.append(node("rect", { x: 0, y: 0, width, height, rx: 3, class: "progress-track" }));
  const share = total > 0 ? Math.min(done / total, 1) : 0;
  svg.append(node("rect", { x: 0, y: 0, width: width * share, height, rx: 3, class: "progress-done" }));
  return svg;
}

/** A histogram of `counts` over bins bounded by `edges`, with its axis ends and a text label. */
export function histogram({ edges, counts }, { width = 260, height = 90, label = "" } = {}) {
  const svg = node("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "histogram", role: "img", "aria-label": label });
  const base = height - 16;
  const most = Math.max(...counts, 1);
  const step = counts.length ? width / counts.length : width;
  counts.forEach((count, i) => {
    const tall = (count / most) * (base - 4);
    const bar = node("rect", { x: i * step + 1, y: base - tall, width: Math.max(step - 2, 1), height: tall, class: "bar", "data-count": count });
    const tip = node("title", {});
    tip.textContent = `${edges[i]}–${edges[i + 1]}: ${count}`;
    bar.append(tip);
    svg.append(bar);
  });
  svg.append(node("line", { x1: 0, x2: width, y1: base, y2: base, class: "axis" }));
  if (edges.length) {
    const low = node("text", { x: 0, y: height - 3, class: "tick" });
    low.textContent = String(edges[0]);
    const high = node("text", { x: width, y: height - 3, class: "tick", "text-anchor": "end" });
    high.textContent = String(edges[edges.length - 1]);
    svg.append(low, high);
  }
  return svg;
}

/** Baseline score (x) against candidate score (y), both on [low, high], with the diagonal of
 * "no change": each point a dot sized by how many pairs sit on it (a grid's cells when
 * `mode` is "grid"); below the diagonal got worse. */
export function scatter({ points, low, high, mode, grid }, { size = 320, label = "", xLabel = "", yLabel = "" } = {}) {
  const pad = 34;
  const svg = node("svg", { width: size, height: size, viewBox: `0 0 ${size} ${size}`, class: "scatter", role: "img", "aria-label": label });
  const span = high - low || 1;
  const at = (v) => pad + ((v - low) / span) * (size - 2 * pad);
  const x = (v) => at(v);
  const y = (v) => size - at(v);
  svg.append(node("rect", { x: pad, y: pad, width: size - 2 * pad, height: size - 2 * pad, class: "plot" }));
  svg.append(node("line", { x1: x(low), y1: y(low), x2: x(high), y2: y(high), class: "diagonal" }));
  const most = Math.max(1, ...points.map((p) => p.count));
  const cell = mode === "grid" ? (size - 2 * pad) / grid : 0;
  for (const p of points) {
    const side = p.y < p.x - 1e-12 ? "worse" : p.y > p.x + 1e-12 ? "better" : "same";
    const share = p.count / most;
    const mark = mode === "grid"
      ? node("rect", { x: x(p.x) - cell / 2, y: y(p.y) - cell / 2, width: cell, height: cell, class: `cell ${side}`, "fill-opacity": (0.25 + 0.75 * share).toFixed(3) })
      : node("circle", { cx: x(p.x), cy: y(p.y), r: (2.5 + 6 * Math.sqrt(share)).toFixed(2), class: `dot ${side}` });
    mark.setAttribute("data-count", String(p.count));
    const tip = node("title", {});
    tip.textContent = `${xLabel} ${p.x.toFixed(3)}, ${yLabel} ${p.y.toFixed(3)}: ${p.count}`;
    mark.append(tip);
    svg.append(mark);
  }
  const tick = (v) => String(Number(v.toFixed(3)));
  const text = (content, attrs) => { const el = node("text", attrs); el.textContent = content; svg.append(el); };
  text(tick(low), { x: pad, y: size - pad + 14, class: "tick" });
  text(tick(high), { x: size - pad, y: size - pad + 14, class: "tick", "text-anchor": "end" });
  text(tick(low), { x: pad - 4, y: size - pad, class: "tick", "text-anchor": "end" });
  text(tick(high), { x: pad - 4, y: pad + 8, class: "tick", "text-anchor": "end" });
  text(xLabel, { x: size / 2, y: size - 6, class: "axis-label", "text-anchor": "middle" });
  text(yLabel, { x: 12, y: size / 2, class: "axis-label", "text-anchor": "middle", transform: `rotate(-90 12 ${size / 2})` });
  return svg;
}

/** When a span ran within its trace: a track for the trace (`total`), the span's part of it
 * from `from` to `to` (all in the same unit, from the trace's start). */
export function spanBar(from, to, total, { width = 220, height = 12 } = {}) {
  const svg = node("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "span-bar", "aria-hidden": "true" });
  const x = (v) => (total > 0 ? (Math.min(Math.max(v, 0), total) / total) * width : 0);
  svg.append(node("rect", { x: 0, y: 2, width, height: height - 4, rx: 2, class: "span-track" }));
  svg.append(node("rect", { x: x(from), y: 2, width: Math.max(x(to) - x(from), 1.5), height: height - 4, rx: 2, class: "span-part" }));
  return svg;
}

/** A metric over time: per bucket (`{x, width, mean, low, high, n, small}`, x and width in
 * the same unit from `xMin` to `xMax`) its 95% interval as a band and its mean as a point on
 * a line; a bucket over few values (`small`) drawn hollow. `ticks` label the x axis
 * (`{x, text}`); `tip(bucket)` is each point's hover text. */
export function seriesChart({ buckets, xMin, xMax, lo, hi, ticks = [] }, { width = 560, height = 180, label = "", tip = () => "" } = {}) {
  const pad = { left: 34, right: 10, top: 8, bottom: 20 };
  const svg = node("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "series", role: "img", "aria-label": label });
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const x = (v) => pad.left + ((v - xMin) / (xMax - xMin || 1)) * plotW;
  const y = (v) => pad.top + (1 - (Math.min(Math.max(v, lo), hi) - lo) / (hi - lo || 1)) * plotH;
  svg.append(node("rect", { x: pad.left, y: pad.top, width: plotW, height: plotH, class: "plot" }));
  const text = (content, attrs) => { const el = node("text", attrs); el.textContent = content; svg.append(el); };
  for (const v of [lo, (lo + hi) / 2, hi]) {
    svg.append(node("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), class: "grid" }));
    text(String(Number(v.toFixed(2))), { x: pad.left - 4, y: y(v) + 3, class: "tick", "text-anchor": "end" });
  }
  for (const b of buckets) {
    if (b.low === null || b.high === null || b.mean === null) continue;
    svg.append(node("rect", { x: x(b.x), y: y(b.high), width: Math.max(x(b.x + b.width) - x(b.x), 1), height: Math.max(y(b.low) - y(b.high), 1), class: b.small ? "band small" : "band" }));
  }
  const points = buckets.filter((b) => b.mean !== null);
  if (points.length > 1) {
    const d = points.map((b, i) => `${i ? "L" : "M"}${x(b.x + b.width / 2).toFixed(1)},${y(b.mean).toFixed(1)}`).join(" ");
    svg.append(node("path", { d, class: "mean-line" }));
  }
  for (const b of points) {
    const dot = node("circle", { cx: x(b.x + b.width / 2), cy: y(b.mean), r: 3.5, class: b.small ? "mean small" : "mean", "data-n": b.n });
    const title = node("title", {});
    title.textContent = tip(b);
    dot.append(title);
    svg.append(dot);
  }
  for (const tick of ticks) text(tick.text, { x: x(tick.x), y: height - 5, class: "tick", "text-anchor": tick.anchor || "middle" });
  return svg;
}
