// The Monitor view (`#/monitor?bucket=day&baseline=run:<id>`): each metric the online rules
// score, over time in hour or day buckets (mean with its 95% CI band and n per bucket, few
// values flagged as everywhere else); the drift of the last window against a baseline (the
// earlier window or a stored run) with Compare's verdicts and wording; the online rules with
// what they spent today and the traces they scored; the alert rules and their episodes.
import { ApiError, get, query } from "./api.js";
import { seriesChart } from "./chart.js";
import { noteText } from "./compare.js";
import { h } from "./dom.js";
import { lang, t } from "./i18n.js";
import { whoami } from "./label_panel.js";
import { runChoice } from "./labels.js";
import { replaceParams } from "./router.js";
import { RulesPanel } from "./rules.js";
import { notInformative, percent, pValue, signed, verdictBadge } from "./stats_text.js";
import { alertBox, table, when } from "./widgets.js";

const BUCKETS = ["hour", "day"];
/** the most metrics one monitor request takes (the API's limit) */
const MAX_METRICS = 20;
const BUCKET_MS = { hour: 3600 * 1000, day: 24 * 3600 * 1000 };

function fmt(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

const stamp = (text) => Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(text) ? text : `${text}Z`);

/** A bucket's start as the axis and table show it: the hour, or the day. */
function bucketText(text, bucket) {
  const options = bucket === "hour"
    ? { month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit" }
    : { year: "numeric", month: "2-digit", day: "2-digit" };
  return new Date(stamp(text)).toLocaleString(lang() === "zh" ? "zh-CN" : "en-GB", options);
}

/** A bucket's mean with its interval, or with "interval not informative (n)" where flagged. */
function meanText(b) {
  if (b.mean === null || b.mean === undefined) return h("span", { class: "muted" }, t("metric.noScore"));
  const flagged = notInformative(b.ci_note, b.n);
  return flagged ? h("span", { class: "num" }, `${fmt(b.mean)} `, flagged)
    : h("span", { class: "num" }, `${fmt(b.mean)} [${fmt(b.ci95_low)}, ${fmt(b.ci95_high)}]`);
}

/** The metrics of the online rules, in the rules' order, each once. */
function metricsOf(rules) {
  return [...new Set(rules.flatMap((info) => info.rule.metrics))];
}

export class MonitorView {
  constructor(root, params) {
    this.root = root;
    this.params = params;
    this.stopped = false;
  }

  stop() {
    this.stopped = true;
  }

  get bucket() {
    return BUCKETS.includes(this.params.get("bucket")) ? this.params.get("bucket") : "hour";
  }

  async start() {
    this.controls = h("div", { id: "monitor-controls" });
    this.series = h("div", { id: "monitor-series", "aria-live": "polite" });
    this.drift = h("div", { id: "monitor-drift" });
    this.rules = h("div", { id: "monitor-rules" });
    this.alerts = h("div", { id: "monitor-alerts" });
    this.root.replaceChildren(
      h("section", { class: "view-head" }, h("h1", {}, t("mon.title")), h("p", { class: "muted" }, t("mon.intro")), this.controls),
      h("h2", {}, t("mon.series")), this.series,
      h("h2", {}, t("mon.drift")), this.drift,
      h("h2", {}, t("mon.rules")), this.rules,
      h("h2", {}, t("mon.alerts")), this.alerts);
    const runs = get(`/evaluate/runs${query({ limit: 200 })}`).catch(() => ({ items: [] }));
    const alerts = this.loadAlerts();
    this.panel = new RulesPanel(this.rules, this.params, {
      changed: () => this.loadRules(),
      go: (params) => replaceParams("monitor", params),
    });
    const ready = await this.loadRules();
    if (this.stopped) return;
    if (ready) this.controls.replaceChildren(this.form((await runs).items));
    await alerts;
  }

  /** The rules (again, after a change) and the metrics they score; false when refused. */
  async loadRules() {
    let rules;
    let me;
    try {
      [rules, me] = await Promise.all([get("/online/rules"), whoami()]);
    } catch (error) {
      if (!(error instanceof ApiError) || this.stopped || error.status === 401) return false;
      this.rules.replaceChildren(alertBox(t("error", { message: error.message })));
      this.series.replaceChildren(h("div", { class: "empty" }, h("p", {}, t("mon.noRules"))));
      return false;
    }
    if (this.stopped) return false;
    this.panel.show(rules, me);
    this.metrics = metricsOf(rules).slice(0, MAX_METRICS);
    await this.load();
    return true;
  }

  form(runs) {
    const bucket = h("select", { id: "m-bucket", name: "bucket" },
      BUCKETS.map((b) => h("option", { value: b, selected: this.bucket === b }, t(`mon.bucket.${b}`))));
    const chosen = this.params.get("baseline") || "window";
    const ids = runs.map((run) => run.run_id);
    const choices = runs.map((run) => h("option", { value: `run:${run.run_id}`, selected: chosen === `run:${run.run_id}` }, runChoice(run)));
    if (chosen.startsWith("run:") && !ids.includes(chosen.slice(4))) choices.unshift(h("option", { value: chosen, selected: true }, chosen.slice(4, 16)));
    const baseline = h("select", { id: "m-baseline", name: "baseline" },
      h("option", { value: "window", selected: chosen === "window" }, t("mon.baseline.window")), choices);
    const change = (name, value, fallback) => {
      if (value && value !== fallback) this.params.set(name, value);
      else this.params.delete(name);
      replaceParams("monitor", this.params);
      this.load();
    };
    bucket.addEventListener("change", () => change("bucket", bucket.value, "hour"));
    baseline.addEventListener("change", () => change("baseline", baseline.value, "window"));
    return h("form", { class: "filters", onsubmit: (e) => e.preventDefault() },
      h("label", { for: "m-bucket" }, t("mon.bucket")), bucket,
      h("label", { for: "m-baseline" }, t("mon.baseline")), baseline);
  }

  async load() {
    if (!this.metrics.length) {
      this.series.replaceChildren(h("div", { class: "empty" }, h("p", {}, t("mon.noRules"))));
      this.drift.replaceChildren();
      return;
    }
    const ticket = (this.ticket = (this.ticket || 0) + 1);
    const ask = { metric: this.metrics, bucket: this.bucket, baseline: this.params.get("baseline") || "window" };
    let found;
    try {
      found = await get(`/online/monitor${query(ask)}`);
    } catch (error) {
      if (!(error instanceof ApiError) || this.stopped || ticket !== this.ticket || error.status === 401) return;
      this.series.replaceChildren(alertBox(t("error", { message: error.message })));
      this.drift.replaceChildren();
      return;
    }
    if (this.stopped || ticket !== this.ticket) return;
    this.series.replaceChildren(h("div", { class: "monitor-cards" }, found.metrics.map((m) => this.card(found, m))));
    this.drift.replaceChildren(this.driftTable(found));
  }

  /** One metric: its chart, then its buckets with mean, interval, n and nulls. */
  card(found, m) {
    const width = BUCKET_MS[found.bucket];
    const buckets = m.buckets.map((b) => ({ x: stamp(b.start), width, mean: b.mean, low: b.ci95_low, high: b.ci95_high, n: b.n, small: b.small_sample }));
    const values = buckets.flatMap((b) => [b.low, b.high, b.mean]).filter((v) => v !== null && v !== undefined);
    const xMin = Math.min(stamp(found.since), ...buckets.map((b) => b.x));
    const xMax = Math.max(stamp(found.until), ...buckets.map((b) => b.x + width));
    const chart = seriesChart({
      buckets, xMin, xMax, lo: Math.min(0, ...values), hi: Math.max(1, ...values),
      ticks: [{ x: xMin, text: bucketText(found.since, found.bucket), anchor: "start" }, { x: xMax, text: bucketText(found.until, found.bucket), anchor: "end" }],
    }, { label: t("mon.chartLabel", { metric: m.metric, n: m.buckets.length }),
      tip: (b) => `${bucketText(new Date(b.x).toISOString(), found.bucket)}: ${fmt(b.mean)} [${fmt(b.low)}, ${fmt(b.high)}], n=${b.n}${b.small ? ` (${t("mon.smallN")})` : ""}` });
    const rows = [...m.buckets].reverse().map((b) => h("tr", { "data-bucket": b.start, class: b.small_sample ? "small-n" : null },
      h("th", { scope: "row", class: "nowrap" }, bucketText(b.start, found.bucket)),
      h("td", {}, meanText(b)),
      h("td", { class: "num", "data-col": "n" }, String(b.n)),
      h("td", { class: "num" }, b.nulls ? h("span", { class: "nulls" }, String(b.nulls)) : "0")));
    const head = [t(`mon.bucket.${found.bucket}`), t("mon.mean"), "n", t("mon.nulls")];
    return h("section", { class: "metric-card monitor-card", "data-metric": m.metric },
      h("h3", {}, m.metric),
      m.buckets.length ? chart : h("p", { class: "muted" }, t("mon.noScores")),
      h("p", { class: "muted small legend-line" }, t("mon.legend")),
      m.buckets.length ? h("details", { class: "buckets" }, h("summary", {}, t("mon.bucketTable", { n: m.buckets.length })),
        h("div", { class: "scroll" }, table("buckets", "", head, rows))) : null);
  }

  /** Drift of the last window against the baseline, per metric, with Compare's verdicts. */
  driftTable(found) {
    const first = found.metrics.find((m) => m.drift) || {};
    const head = [t("cmp.metric"), t("mon.baselineMean"), t("mon.recentMean"), t("mon.delta", { level: percent(first.drift?.ci_level ?? 0.95) }),
      t("cmp.pAdjusted"), t("cmp.verdict")];
    const rows = found.metrics.map((m) => {
      const d = m.drift;
      if (!d) {
        return h("tr", { "data-metric": m.metric }, h("th", { scope: "row" }, m.metric),
          h("td", { colspan: 5, class: "muted" }, m.empty_side === "recent" ? t("mon.noRecent", { metric: m.metric })
            : m.empty_side === "baseline" ? t("mon.noBaseline", { metric: m.metric }) : (m.note || t("mon.noDrift"))));
      }
      const flagged = notInformative(d.ci_note, Math.min(d.recent_n, d.baseline_n));
      const note = noteText({ notes: d.notes, note: null });
      return h("tr", { "data-metric": m.metric },
        h("th", { scope: "row" }, m.metric),
        h("td", { class: "num" }, t("mon.meanN", { mean: fmt(d.baseline_mean), n: d.baseline_n })),
        h("td", { class: "num" }, t("mon.meanN", { mean: fmt(d.recent_mean), n: d.recent_n })),
        h("td", { class: "num delta" }, flagged ? [`${signed(d.delta)} `, flagged] : `${signed(d.delta)} [${signed(d.ci_low)}, ${signed(d.ci_high)}]`,
          note ? h("span", { class: "muted small note" }, note) : null),
        h("td", { class: "num", title: t("cmp.pRaw", { p: pValue(d.p_value) }) }, pValue(d.p_adjusted)),
        h("td", {}, verdictBadge(d)));
    });
    const base = found.baseline === "window" ? t("mon.baselineIsWindow", { since: when(found.recent_since) }) : t("mon.baselineIsRun", { run: found.baseline.slice(4, 16) });
    const caption = t("mon.driftCaption", { since: when(found.recent_since), baseline: base });
    const correction = first.drift
      ? t("cmp.correction", { level: percent(1 - found.alpha), m: first.drift.family, each: percent(first.drift.ci_level) })
      : null;
    return h("div", {}, table("compare-metrics drift", caption, head, rows),
      correction ? h("p", { class: "muted small compare-note", id: "drift-correction" }, t("mon.permutation"), " ", correction) : null);
  }

  async loadAlerts() {
    let rules;
    let events;
    try {
      [rules, events] = await Promise.all([get("/online/alerts"), get(`/online/alert-events${query({ limit: 50 })}`)]);
    } catch (error) {
      if (!(error instanceof ApiError) || this.stopped || error.status === 401) return;
      this.alerts.replaceChildren(alertBox(t("error", { message: error.message })));
      return;
    }
    if (this.stopped) return;
    const ruleRows = rules.map((a) => h("tr", { "data-alert": a.name, class: a.firing ? "failed" : null },
      h("th", { scope: "row" }, a.name),
      h("td", { class: "mono small" }, a.rule),
      h("td", { class: "small" }, a.webhook || h("span", { class: "muted" }, t("mon.noWebhook"))),
      h("td", {}, a.firing ? h("span", { class: "badge state-failed" }, t("mon.firing"))
        : h("span", { class: a.enabled ? "badge state-done" : "badge archived" }, t(a.enabled ? "mon.quiet" : "mon.paused")))));
    const eventRows = events.map((e) => h("tr", { "data-event": e.id, "data-rule": e.rule, class: e.resolved_at ? null : "failed" },
      h("th", { scope: "row" }, e.rule),
      h("td", { class: "nowrap" }, when(e.fired_at)),
      h("td", { class: "num" }, t("mon.valueN", { value: fmt(e.value), n: e.n })),
      h("td", { class: "nowrap" }, e.resolved_at ? [when(e.resolved_at), " ", h("span", { class: "muted small" }, t("mon.valueN", { value: fmt(e.resolved_value), n: e.resolved_n ?? 0 }))]
        : h("span", { class: "badge state-failed" }, t("mon.firing"))),
      h("td", { class: "small" }, [e.fired_delivery, e.resolved_delivery].filter(Boolean).map((d) => d === "no webhook" ? t("mon.noWebhook") : d).join(" · ") || "–")));
    this.alerts.replaceChildren(
      rules.length ? table("alert-rules", t("mon.alertRules", { n: rules.length }), [t("mon.rule"), t("mon.condition"), t("mon.webhook"), t("col.state")], ruleRows)
        : h("div", { class: "empty" }, h("p", {}, t("mon.noAlerts"))),
      h("h3", {}, t("mon.events")),
      events.length ? table("alert-events", t("mon.eventsCaption", { n: events.length }), [t("mon.rule"), t("mon.fired"), t("mon.value"), t("mon.resolved"), t("mon.delivery")], eventRows)
        : h("p", { class: "muted", id: "no-events" }, t("mon.noEvents")));
  }
}
