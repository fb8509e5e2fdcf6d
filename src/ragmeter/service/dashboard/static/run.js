// The Run view (`#/runs/<id>`): per metric its mean and 95% CI, a histogram of its scores and
// its nulls by reason; cost, duration and live state; the rows paged, sorted and filtered on the
// server, the choices kept in the URL.
import { get, query } from "./api.js";
import { histogram, intervalBar, progressBar } from "./chart.js";
import { h } from "./dom.js";
import { lang, t } from "./i18n.js";
import { labelsCard, runTitle } from "./labels.js";
import { lineagePanel } from "./lineage.js";
import { replaceParams } from "./router.js";
import { notInformative, scaled } from "./stats_text.js";

const LIVE = new Set(["pending", "running"]);
const PAGE = 50;
const POLL_MS = 1500;
const FILTERS = ["metric", "sort", "order", "failures", "below", "q"];

function fmt(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

function stamp(text) {
  return text ? new Date(/[zZ]|[+-]\d\d:\d\d$/.test(text) ? text : `${text}Z`) : null;
}

function when(text) {
  const date = stamp(text);
  return date ? date.toLocaleString(lang() === "zh" ? "zh-CN" : "en-GB") : "–";
}

function duration(run) {
  const start = stamp(run.started_at);
  if (!start || run.state === "pending") return "–"; // a run made while scored: not started yet
  const end = stamp(run.finished_at) || new Date();
  const seconds = Math.max((end - start) / 1000, 0);
  if (seconds < 60) return t("run.seconds", { n: seconds.toFixed(1) });
  const minutes = Math.floor(seconds / 60);
  return t("run.minutes", { m: minutes, s: Math.round(seconds - minutes * 60) });
}

function fact(label, ...value) {
  return h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, ...value));
}

function nullList(found) {
  if (!found.nulls.length) return null;
  const items = found.nulls.map((n) => h("li", {},
    h("span", { class: "badge kind" }, n.error_kind ? t(`kind.${n.error_kind}`) : t("kind.none")),
    h("span", { class: "reason" }, n.reason || t("run.noReason")),
    h("span", { class: "num" }, `× ${n.count}`)));
  if (found.other_nulls) items.push(h("li", { class: "muted" }, t("run.otherNulls", { n: found.other_nulls })));
  return h("ul", { class: "null-reasons", "aria-label": t("run.nullReasons", { metric: found.metric_name }) }, items);
}

/** The metric's mean corrected by the run's human labels, where it has some. */
function calibratedLine(s) {
  if (s.labelled === undefined || s.labelled === null) return null;
  const line = t("run.calibrated", { n: s.labelled, mean: fmt(s.calibrated_mean), low: fmt(s.calibrated_low), high: fmt(s.calibrated_high) });
  return h("div", { class: "calibrated" },
    h("p", { class: "small", title: t("run.calibratedHint") }, line),
    s.calibrated_note ? h("p", { class: "muted small" }, s.calibrated_note) : null);
}

/** The judge card of the judge that made these scores, as the gate and the report say it. */
function judgeCardLine(card) {
  if (!card) return null;
  const text = String(card.headline || "").replace(/^judge card:\s*/, "");
  return h("p", { class: "muted small judge-card", title: t("run.judgeCardHint") },
    t("run.judgeCard", { text, when: String(card.created_at || "").slice(0, 10) }));
}

function metricCard(name, s, found, card = null) {
  const scored = found && found.counts.length;
  const label = t("run.histLabel", { metric: name, n: s.count ?? 0 });
  return h("section", { class: "metric-card", "data-metric": name, "aria-label": name },
    h("h3", {}, scaled(name, s.scale)),
    h("p", { class: "big num" }, fmt(s.mean), " ",
      notInformative(s.ci_note, s.count ?? 0) || h("span", { class: "muted ci" }, `[${fmt(s.ci95_low)}, ${fmt(s.ci95_high)}]`)),
    s.ci_note ? null : intervalBar({ mean: s.mean, low: s.ci95_low, high: s.ci95_high }, { width: 260 }),
    h("p", { class: "muted small" }, t("run.counts", { n: s.count ?? 0, nulls: s.null ?? 0 })),
    calibratedLine(s),
    judgeCardLine(card),
    scored ? histogram(found, { label }) : h("p", { class: "muted" }, t("metric.noScore")),
    found && found.nulls.length ? h("h4", {}, t("run.nulls")) : null,
    found ? nullList(found) : null);
}

export class RunView {
  constructor(root, id, params) {
    this.root = root;
    this.id = id;
    this.params = params;
    this.timer = null;
    this.stopped = false;
    this.run = null;
  }

  async start() {
    this.run = await get(`/evaluate/runs/${encodeURIComponent(this.id)}`);
    if (this.stopped) return;
    this.head = h("div", { id: "run-head", "aria-live": "polite" });
    this.about = h("div", { id: "run-about", class: "run-about" });
    this.cards = h("div", { id: "run-metrics", class: "metric-cards" });
    this.body = h("div", { id: "rows-body", "aria-live": "polite" });
    this.root.replaceChildren(this.head, this.about, this.cards,
      h("h2", {}, t("run.rows")), this.filters(), this.body);
    this.renderAbout();
    await this.refresh(this.run);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** The run's head, cards and rows; `known`: the run as just fetched (not asked again). */
  async refresh(known = null) {
    clearTimeout(this.timer);
    const rows = this.load(); // the table's page comes alongside the summary, not after it
    const [run, found] = await Promise.all([
      known || get(`/evaluate/runs/${encodeURIComponent(this.id)}`),
      get(`/evaluate/runs/${encodeURIComponent(this.id)}/distribution`),
    ]);
    if (this.stopped) return;
    this.run = run;
    this.renderHead();
    const byName = new Map(found.map((d) => [d.metric_name, d]));
    const judged = await this.judgeCards(run);
    if (this.stopped) return;
    this.cards.replaceChildren(...run.metrics.map((name) => metricCard(name, (run.summary || {})[name] || {}, byName.get(name), judged.get(name))));
    await rows;
    if (LIVE.has(run.state) && !this.stopped) this.timer = setTimeout(() => this.refresh().catch(() => {}), POLL_MS);
  }

  /** The newest judge card of the run's judge on each metric (asked once per view). */
  async judgeCards(run) {
    const model = ((run.lineage || {}).judge || {}).model;
    if (!model) return new Map();
    if (!this.cardsAsked) {
      this.cardsAsked = get(`/judge/cards${query({ judge_model: model, limit: 100 })}`).catch(() => []);
    }
    const found = new Map();
    for (const card of await this.cardsAsked) if (!found.has(card.metric)) found.set(card.metric, card);
    return found;
  }

  renderHead() {
    const run = this.run;
    const { done = 0, total = 0 } = run.progress || {};
    const cost = run.cost || {};
    const tokens = (cost.prompt_tokens || 0) + (cost.completion_tokens || 0);
    const target = run.label || (run.scene_value ? `${run.scene_key}: ${run.scene_value}` : run.scene_key);
    this.head.replaceChildren(
      h("p", {}, h("a", { href: "#/runs" }, t("run.back"))),
      h("h1", {}, runTitle(run)),
      ...(run.scripted_judge
        ? [h("p", { class: "scripted-note", role: "note" }, h("span", { class: "badge scripted" }, t("scripted.badge")), " ", t("scripted.note"))]
        : []),
      h("p", { class: "muted subtitle" }, t("run.title", { id: run.run_id.slice(0, 12) })),
      h("p", { class: "run-links" }, h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}/review`, id: "run-review" }, t("run.review"))),
      h("dl", { class: "facts" },
        fact(t("col.state"), h("span", { class: `badge state-${run.state}`, id: "run-state" }, t(`state.${run.state}`)),
          " ", progressBar(done, total), " ", h("span", { class: "muted small" }, t("progress", { done, total }))),
        fact(t("col.target"), target),
        fact(t("run.requests"), String(cost.requests || 0)),
        fact(t("run.cached"), String(cost.cached || 0)),
        fact(t("run.tokens"), t("run.tokenLine", { n: tokens, p: cost.prompt_tokens || 0, c: cost.completion_tokens || 0 })),
        fact(t("run.duration"), duration(run)),
        fact(t("col.date"), when(run.created_at))),
      ...(run.error ? [h("p", { class: "error", role: "alert" }, run.error)] : []));
  }

  /** Name, tags and note (editable), and what made the run; not redrawn while it polls. */
  renderAbout() {
    this.about.replaceChildren(
      labelsCard(this.run, (run) => {
        this.run = { ...this.run, ...run, summary: this.run.summary };
        this.renderHead();
        this.renderAbout();
      }),
      lineagePanel(this.run));
  }

  filters() {
    const p = this.params;
    const metrics = this.run.metrics;
    const metric = h("select", { id: "r-metric", name: "metric" },
      h("option", { value: "" }, t("run.anyMetric")),
      metrics.map((m) => h("option", { value: m, selected: p.get("metric") === m }, m)));
    const sort = h("select", { id: "r-sort", name: "sort" },
      ["row", "score"].map((v) => h("option", { value: v, selected: (p.get("sort") || "row") === v }, t(`run.sort.${v}`))));
    const order = h("select", { id: "r-order", name: "order" },
      ["asc", "desc"].map((v) => h("option", { value: v, selected: (p.get("order") || "asc") === v }, t(`run.order.${v}`))));
    const failures = h("input", { id: "r-failures", type: "checkbox", name: "failures", checked: p.get("failures") === "1" });
    const below = h("input", { id: "r-below", type: "number", name: "below", step: "0.05", value: p.get("below") || "", class: "short" });
    const search = h("input", { id: "r-q", type: "search", name: "q", value: p.get("q") || "", maxlength: 200, placeholder: t("run.searchHint") });
    let typing = null;
    const later = (values) => { clearTimeout(typing); typing = setTimeout(() => this.change(values()), 300); };
    metric.addEventListener("change", () => this.change({ metric: metric.value }));
    sort.addEventListener("change", () => this.change({ sort: sort.value === "row" ? "" : sort.value }));
    order.addEventListener("change", () => this.change({ order: order.value === "asc" ? "" : order.value }));
    failures.addEventListener("change", () => this.change({ failures: failures.checked ? "1" : "" }));
    below.addEventListener("input", () => later(() => ({ below: below.value })));
    search.addEventListener("input", () => later(() => ({ q: search.value.trim() })));
    const clear = h("button", { type: "button", class: "secondary", onclick: () => {
      metric.value = ""; sort.value = "row"; order.value = "asc"; failures.checked = false; below.value = ""; search.value = "";
      this.change(Object.fromEntries(FILTERS.map((f) => [f, ""])));
    } }, t("runs.clear"));
    return h("form", { role: "search", class: "filters rows-filters", onsubmit: (e) => e.preventDefault() },
      h("label", { for: "r-metric" }, t("run.metric")), metric,
      h("label", { for: "r-sort" }, t("run.sortBy")), sort,
      h("label", { for: "r-order" }, t("run.order")), order,
      h("span", { class: "check" }, failures, h("label", { for: "r-failures" }, t("run.failures"))),
      h("label", { for: "r-below" }, t("run.below")), below,
      h("label", { for: "r-q" }, t("runs.search")), search,
      clear);
  }

  change(values) {
    for (const [name, value] of Object.entries(values)) {
      if (value) this.params.set(name, value);
      else this.params.delete(name);
    }
    this.params.delete("page");
    replaceParams(`runs/${encodeURIComponent(this.id)}`, this.params);
    this.load();
  }

  ask(pageNo) {
    const p = this.params;
    const needsMetric = p.get("sort") === "score" || p.get("below");
    return {
      offset: (pageNo - 1) * PAGE, limit: PAGE,
      metric: p.get("metric") || (needsMetric ? this.run.metrics[0] : ""),
      sort: p.get("sort"), order: p.get("order"), failures_first: p.get("failures") === "1" ? "true" : "",
      below: p.get("below"), q: p.get("q"),
    };
  }

  async load() {
    const pageNo = Math.max(Number(this.params.get("page") || 1), 1);
    // filters changed quickly send several requests: only the latest one's answer is shown
    const ticket = (this.ticket = (this.ticket || 0) + 1);
    let page;
    try {
      page = await get(`/evaluate/runs/${encodeURIComponent(this.id)}/rows${query(this.ask(pageNo))}`);
    } catch (error) {
      if (this.stopped || error.status === 401 || ticket !== this.ticket) return;
      this.body.replaceChildren(h("p", { class: "error", role: "alert" }, t("error", { message: error.message })));
      return;
    }
    if (this.stopped || ticket !== this.ticket) return;
    this.body.replaceChildren(this.table(page, pageNo));
  }

  table(page, pageNo) {
    if (!page.items.length) return h("div", { class: "empty" }, h("p", {}, t("run.noRows")));
    const metrics = this.run.metrics;
    const table = h("table", { class: "runs rows" },
      h("caption", {}, page.total === 1 ? t("run.rowCount1") : t("run.rowCount", { n: page.total })),
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, "#"), h("th", { scope: "col" }, t("run.query")), h("th", { scope: "col" }, t("run.response")),
        metrics.map((m) => h("th", { scope: "col", class: "num" }, m)))),
      h("tbody", {}, page.items.map((row) => this.row(row, metrics))));
    return h("div", {}, h("div", { class: "table-wrap" }, table), this.pager(page, pageNo));
  }

  row(row, metrics) {
    const failed = metrics.some((m) => { const s = row.scores[m]; return s && (s.score === null || s.passing === false); });
    return h("tr", { "data-row": row.row_index, class: failed ? "failed" : null },
      h("th", { scope: "row", class: "num" },
        h("a", { href: `#/runs/${encodeURIComponent(this.id)}/rows/${row.row_index}`, "aria-label": t("run.openRow", { n: row.row_index }) }, String(row.row_index))),
      h("td", { class: "text" }, row.query),
      h("td", { class: "text" }, row.response),
      metrics.map((m) => {
        const s = row.scores[m] || {};
        if (s.score === null || s.score === undefined) {
          return h("td", { class: "num null", "data-metric": m, title: s.error || "" }, t("run.null"));
        }
        return h("td", { class: s.passing === false ? "num fail" : "num", "data-metric": m }, fmt(s.score));
      }));
  }

  pager(page, pageNo) {
    const pages = Math.max(Math.ceil(page.total / PAGE), 1);
    if (pages === 1) return null;
    const go = (n) => { this.params.set("page", String(n)); replaceParams(`runs/${encodeURIComponent(this.id)}`, this.params); this.load(); };
    const from = page.offset + 1;
    const to = page.offset + page.items.length;
    return h("nav", { class: "pager", "aria-label": t("run.pages") },
      h("button", { type: "button", class: "secondary", disabled: pageNo <= 1, onclick: () => go(pageNo - 1) }, t("runs.prev")),
      h("span", {}, t("runs.page", { from, to, total: page.total })),
      h("button", { type: "button", class: "secondary", disabled: pageNo >= pages, onclick: () => go(pageNo + 1) }, t("runs.next")));
  }
}
