// The Compare view (`#/compare/<baseline>/<candidate>?metric=m&worse=1&page=2&margin=0.02`):
// per metric both means, the paired difference with its 95% family-wise CI and the
// Bonferroni-adjusted p-value (corrected together, as `ragmeter runs compare` shows them) and
// a verdict (better, worse, no evidence of a difference, or equivalent within the margin);
// one metric's rows, largest regression first, and the scatter of their two scores.
import { get, query } from "./api.js";
import { intervalBar, scatter } from "./chart.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { runChoice } from "./labels.js";
import { changesSection } from "./lineage.js";
import { notInformative, percent, pValue, scaled, signed, verdictBadge } from "./stats_text.js";

const PAGE = 50;

/** One run's mean corrected by its labels, or a dash. */
function calibratedCell(found) {
  if (!found || found.value === null) return "—";
  return t("cmp.calibratedCell", { mean: fmt(found.value), low: fmt(found.low), high: fmt(found.high), n: found.n_labelled });
}

/** Each run's corrected mean of the metrics either run has labels of (none: nothing). */
function calibratedTable(comparison) {
  const rows = comparison.filter((c) => c.base_calibrated || c.other_calibrated);
  if (!rows.length) return null;
  const head = [t("cmp.metric"), t("cmp.baseMean"), t("cmp.otherMean")];
  return h("div", { id: "compare-calibrated" },
    h("h2", {}, t("cmp.calibrated")),
    h("div", { class: "table-wrap" }, h("table", { class: "runs compare-calibrated" },
      h("thead", {}, h("tr", {}, head.map((text) => h("th", { scope: "col" }, text)))),
      h("tbody", {}, rows.map((c) => h("tr", { "data-metric": c.metric_name },
        h("th", { scope: "row" }, scaled(c.metric_name, c.scale)),
        h("td", { class: "num" }, calibratedCell(c.base_calibrated)),
        h("td", { class: "num" }, calibratedCell(c.other_calibrated))))))),
    h("p", { class: "muted small" }, t("cmp.calibratedNote")));
}

function fmt(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

/** A metric's note in the reader's language, from its codes (the server's English text for a
 * code this page does not know). */
export function noteText(c) {
  const said = (c.notes || []).map((n) => {
    const v = n.values || {};
    const values = { ...v, p: v.p === undefined ? "" : pValue(v.p), low: signed(v.low, 4), high: signed(v.high, 4),
      by: v.by ? t(`cmp.note.by.${v.by}`) : "" };
    const key = `cmp.note.${n.code}`;
    const text = t(key, values);
    return text === key ? null : text;
  });
  return said.length && said.every((text) => text !== null) ? said.join("; ") : c.note;
}

/** The two run ids after `#/compare/`, decoded ("" when missing). */
function chosenRuns() {
  const path = location.hash.replace(/^#\/?/, "").split("?")[0];
  const [, base = "", other = ""] = path.split("/");
  return [decodeURIComponent(base), decodeURIComponent(other)];
}

function link(base, other, params) {
  const ids = [base, other].filter(Boolean).map(encodeURIComponent).join("/");
  const text = params && params.toString();
  return `#/compare${ids ? `/${ids}` : ""}${text ? `?${text}` : ""}`;
}

/** The difference with its interval, or "interval not informative (n)" where flagged. */
function deltaText(c) {
  if (c.ci_note) return [`${signed(c.delta)} `, notInformative(c.ci_note, c.paired)];
  return `${signed(c.delta)} [${signed(c.ci95_low)}, ${signed(c.ci95_high)}]`;
}

export class CompareView {
  constructor(root, idOrParams, params) {
    this.root = root;
    this.params = typeof idOrParams === "string" ? params : idOrParams;
    [this.base, this.other] = chosenRuns();
    this.stopped = false;
    this.comparison = [];
  }

  async start() {
    this.picker = h("div", { id: "compare-pick" });
    this.changes = h("div", { id: "compare-lineage" });
    this.summary = h("div", { id: "compare-summary", "aria-live": "polite" });
    this.detail = h("div", { id: "compare-detail" });
    this.root.replaceChildren(h("h1", {}, t("cmp.title")), this.picker, this.changes, this.summary, this.detail);
    this.askChanges();
    const listed = get(`/evaluate/runs${query({ limit: 200 })}`);
    if (this.base && this.other) {
      // the statistics, and the rows and scatter of the metric in the URL, asked at once
      this.path = `/evaluate/runs/${encodeURIComponent(this.base)}/compare/${encodeURIComponent(this.other)}`;
      this.asked = get(`${this.path}${query({ margin: this.params.get("margin") })}`);
      this.asked.catch(() => {}); // answered in load()
      if (this.params.get("metric")) this.detailFrame(this.params.get("metric"));
    }
    const page = await listed;
    if (this.stopped) return;
    await this.renderPicker(page);
    if (this.asked && !this.shownMetric) {
      const metricsOf = (id) => (page.items.find((run) => run.run_id === id) || { metrics: [] }).metrics;
      const other = metricsOf(this.other);
      const shared = metricsOf(this.base).filter((m) => other.includes(m));
      if (shared.length) this.detailFrame(shared[0]);
    }
    if (!this.base || !this.other) {
      this.summary.replaceChildren(h("div", { class: "empty" }, h("p", {}, t("cmp.pickTwo"))));
      return;
    }
    await Promise.all([this.loadChanges(), this.load()]);
  }

  stop() {
    this.stopped = true;
  }

  /** What differs between the two runs' lineages and rows, asked with the statistics. */
  askChanges() {
    if (!this.base || !this.other) return;
    const [a, b] = [this.base, this.other].map(encodeURIComponent);
    this.changesAsked = get(`/evaluate/runs/${a}/changes/${b}`);
    this.changesAsked.catch(() => {}); // answered in loadChanges()
  }

  /** The "what changed" table, shown before the numbers. */
  async loadChanges() {
    let found;
    try {
      found = await this.changesAsked;
    } catch (error) {
      if (this.stopped || error.status === 401) return;
      this.changes.replaceChildren(h("p", { class: "error", role: "alert" }, t("error", { message: error.message })));
      return;
    }
    if (!this.stopped) this.changes.replaceChildren(changesSection(found));
  }

  async renderPicker(page) {
    const runs = page.items.map((run) => run.run_id);
    for (const id of [this.base, this.other]) if (id && !runs.includes(id)) runs.unshift(id);
    const label = new Map(page.items.map((run) => [run.run_id, runChoice(run)]));
    const select = (id, chosen) => h("select", { id, name: id },
      h("option", { value: "" }, t("cmp.choose")),
      runs.map((run) => h("option", { value: run, selected: run === chosen }, label.get(run) || run.slice(0, 12))));
    const base = select("c-base", this.base);
    const other = select("c-other", this.other);
    const go = () => { location.hash = link(base.value, other.value); };
    base.addEventListener("change", go);
    other.addEventListener("change", go);
    const swap = h("button", { type: "button", class: "secondary", disabled: !this.base || !this.other,
      onclick: () => { location.hash = link(this.other, this.base, this.params); } }, t("cmp.swap"));
    const margin = h("input", { id: "c-margin", name: "margin", type: "number", min: "0", step: "any",
      placeholder: t("cmp.marginHint"), value: this.params.get("margin") || "" });
    margin.addEventListener("change", () => {
      const params = new URLSearchParams(this.params);
      if (Number(margin.value) > 0) params.set("margin", margin.value);
      else params.delete("margin");
      location.hash = link(this.base, this.other, params);
    });
    this.picker.replaceChildren(h("form", { class: "filters compare-runs", onsubmit: (e) => e.preventDefault() },
      h("label", { for: "c-base" }, t("cmp.baseline")), base,
      h("label", { for: "c-other" }, t("cmp.candidate")), other, swap,
      h("label", { for: "c-margin" }, t("cmp.margin")), margin));
  }

  /** The row table and scatter of `metric`, asked now (before the statistics answer). */
  detailFrame(metric) {
    this.params.set("metric", metric);
    this.pairsBox = h("div", { id: "pairs-body", "aria-live": "polite" });
    this.scatterBox = h("figure", { id: "compare-scatter", class: "scatter-box" });
    this.controls = h("div", {});
    this.detail.replaceChildren(this.controls, h("div", { class: "compare-grid" }, this.pairsBox, this.scatterBox));
    this.shownMetric = metric;
    this.pending = Promise.all([this.loadPairs(), this.loadScatter()]);
  }

  async load() {
    try {
      this.comparison = await this.asked;
    } catch (error) {
      if (this.stopped || error.status === 401) return;
      this.summary.replaceChildren(h("p", { class: "error", role: "alert" }, t("error", { message: error.message })));
      this.detail.replaceChildren();
      return;
    }
    if (this.stopped) return;
    this.summary.replaceChildren(this.metricTable());
    const names = this.comparison.map((c) => c.metric_name);
    if (!names.includes(this.params.get("metric"))) this.params.set("metric", names[0]);
    if (this.shownMetric !== this.params.get("metric")) this.detailFrame(this.params.get("metric"));
    this.controls.replaceChildren(this.rowControls(names));
    await this.pending;
  }

  /** The header's interval label and the note saying how the numbers are corrected. */
  correction() {
    const first = this.comparison.find((c) => c.ci_level !== null) || this.comparison[0] || {};
    const level = percent(first.confidence ?? 0.95);
    let note = t("cmp.correction", { level, m: first.family ?? 1, each: percent(first.ci_level ?? 0.95) });
    if (first.margin !== null && first.margin !== undefined) note += t("cmp.marginNote", { margin: first.margin });
    return { delta: t("cmp.delta", { level }), note, p: "cmp.pAdjusted" };
  }

  metricTable() {
    const first = this.comparison[0] || {};
    const said = this.correction();
    const head = [t("cmp.metric"), t("cmp.baseMean"), t("cmp.otherMean"), said.delta, t(said.p),
      t("cmp.verdict"), t("cmp.paired"), t("cmp.unpaired")];
    const table = h("div", { class: "table-wrap" }, h("table", { class: "runs compare-metrics" },
      h("caption", {}, t(first.paired_by === "id" ? "cmp.byId" : "cmp.byQuery")),
      h("thead", {}, h("tr", {}, head.map((text) => h("th", { scope: "col" }, text)))),
      h("tbody", {}, this.comparison.map((c) => h("tr", { "data-metric": c.metric_name },
        h("th", { scope: "row" }, scaled(c.metric_name, c.scale)),
        h("td", { class: "num" }, fmt(c.base_mean)),
        h("td", { class: "num" }, fmt(c.other_mean)),
        h("td", { class: "num delta" }, h("div", { class: "delta-cell" },
          h("span", {}, deltaText(c)),
          c.delta === null || c.ci_note ? null : intervalBar({ mean: c.delta, low: c.ci95_low, high: c.ci95_high }, { lo: -1, hi: 1, width: 120, zero: true }),
          c.note ? h("span", { class: "muted small note" }, noteText(c)) : null)),
        h("td", { class: "num", title: c.p_value === null ? "" : t("cmp.pRaw", { p: pValue(c.p_value) }) }, pValue(c.p_adjusted)),
        h("td", {}, verdictBadge(c)),
        h("td", { class: "num" }, String(c.paired)),
        h("td", { class: "num" }, `${c.base_unpaired} / ${c.other_unpaired}`))))));
    return h("div", {}, table, said.note ? h("p", { class: "muted small compare-note", id: "compare-correction" }, said.note) : null,
      calibratedTable(this.comparison));
  }

  rowControls(names) {
    const metric = h("select", { id: "c-metric", name: "metric" },
      names.map((m) => h("option", { value: m, selected: this.params.get("metric") === m }, m)));
    const worse = h("input", { id: "c-worse", type: "checkbox", name: "worse", checked: this.params.get("worse") === "1" });
    metric.addEventListener("change", () => this.change({ metric: metric.value }, true));
    worse.addEventListener("change", () => this.change({ worse: worse.checked ? "1" : "" }, false));
    return h("form", { class: "filters rows-filters", onsubmit: (e) => e.preventDefault() },
      h("h2", {}, t("cmp.rows")),
      h("label", { for: "c-metric" }, t("run.metric")), metric,
      h("span", { class: "check" }, worse, h("label", { for: "c-worse" }, t("cmp.worseOnly"))));
  }

  change(values, scatterToo) {
    for (const [name, value] of Object.entries(values)) {
      if (value) this.params.set(name, value);
      else this.params.delete(name);
    }
    this.params.delete("page");
    history.replaceState(null, "", link(this.base, this.other, this.params));
    this.loadPairs();
    if (scatterToo) this.loadScatter();
  }

  async loadPairs() {
    const body = this.pairsBox;
    const pageNo = Math.max(Number(this.params.get("page") || 1), 1);
    const ask = { metric: this.params.get("metric"), offset: (pageNo - 1) * PAGE, limit: PAGE,
      regressions_only: this.params.get("worse") === "1" ? "true" : "" };
    let page;
    try {
      page = await get(`${this.path}/rows${query(ask)}`);
    } catch (error) {
      if (this.stopped || error.status === 401) return;
      body.replaceChildren(h("p", { class: "error", role: "alert" }, t("error", { message: error.message })));
      return;
    }
    if (this.stopped) return;
    body.replaceChildren(this.pairTable(page, pageNo));
  }

  pairTable(page, pageNo) {
    if (!page.items.length) return h("div", { class: "empty" }, h("p", {}, t(this.params.get("worse") === "1" ? "cmp.noWorse" : "cmp.noPairs")));
    const run = encodeURIComponent(this.other);
    const table = h("table", { class: "runs rows pairs" },
      h("caption", {}, t(page.total === 1 ? "cmp.pairCount1" : "cmp.pairCount", { n: page.total })),
      h("thead", {}, h("tr", {}, ["#", t("run.query"), t("cmp.base"), t("cmp.other"), t("cmp.change")]
        .map((text, i) => h("th", { scope: "col", class: i >= 2 ? "num" : null }, text)))),
      h("tbody", {}, page.items.map((p) => h("tr", {
        "data-row": p.other_index, "data-key": String(p.key),
        class: p.delta !== null && p.delta < 0 ? "worse" : p.delta > 0 ? "better" : null },
      h("th", { scope: "row", class: "num" }, h("a", { href: `#/runs/${run}/rows/${p.other_index}`,
        "aria-label": t("cmp.openRow", { n: p.other_index }) }, String(p.other_index))),
      h("td", { class: "text" }, p.query),
      h("td", { class: "num" }, p.base_score === null ? t("run.null") : fmt(p.base_score)),
      h("td", { class: "num" }, p.other_score === null ? t("run.null") : fmt(p.other_score)),
      h("td", { class: "num delta" }, signed(p.delta))))));
    return h("div", {}, h("div", { class: "table-wrap" }, table), this.pager(page, pageNo));
  }

  pager(page, pageNo) {
    const pages = Math.max(Math.ceil(page.total / PAGE), 1);
    if (pages === 1) return null;
    const go = (n) => {
      this.params.set("page", String(n));
      history.replaceState(null, "", link(this.base, this.other, this.params));
      this.loadPairs();
    };
    const from = page.offset + 1;
    const to = page.offset + page.items.length;
    return h("nav", { class: "pager", "aria-label": t("run.pages") },
      h("button", { type: "button", class: "secondary", disabled: pageNo <= 1, onclick: () => go(pageNo - 1) }, t("runs.prev")),
      h("span", {}, t("runs.page", { from, to, total: page.total })),
      h("button", { type: "button", class: "secondary", disabled: pageNo >= pages, onclick: () => go(pageNo + 1) }, t("runs.next")));
  }

  async loadScatter() {
    const box = this.scatterBox;
    const metric = this.params.get("metric");
    let found;
    try {
      found = await get(`${this.path}/scatter${query({ metric })}`);
    } catch (error) {
      if (this.stopped || error.status === 401) return;
      box.replaceChildren(h("p", { class: "error", role: "alert" }, t("error", { message: error.message })));
      return;
    }
    if (this.stopped) return;
    const label = t("cmp.scatterLabel", { metric, n: found.paired });
    box.replaceChildren(
      scatter(found, { label, xLabel: t("cmp.base"), yLabel: t("cmp.other") }),
      h("figcaption", { class: "muted small" }, label, " ",
        found.mode === "grid" ? t("cmp.grid", { n: found.grid }) : "", " ", t("cmp.scatterHint")));
  }
}
