// The Review view (`#/runs/<id>/review`): the run's review queues with each reviewer's progress
// and a link to the caller's next row; a form making a queue (metric, sampling rule, rows per
// reviewer, reviewers, reviewers per row); the judge's agreement with the labels per metric.
import { ApiError, get, post } from "./api.js";
import { progressBar } from "./chart.js";
import { announce, h } from "./dom.js";
import { t } from "./i18n.js";
import { runTitle } from "./labels.js";
import { notInformative } from "./stats_text.js";
import { whoami } from "./label_panel.js";

const RULES = ["random", "stratified", "disagreement", "threshold", "failures"];
const MAKERS = new Set(["admin", "member"]);

function fmt(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

function field(id, label, input, hint) {
  return h("div", { class: "field" }, h("label", { for: id }, label), input,
    hint ? h("span", { class: "muted small" }, hint) : null);
}

/** The caller's next row of a queue (the first not labelled, else the first). */
async function nextRow(runId, queue) {
  const mine = await get(`/evaluate/runs/${encodeURIComponent(runId)}/reviews/${queue.id}`);
  const item = mine.items.find((i) => !i.done) || mine.items[0];
  return item ? item.row_index : null;
}

function progressCell(queue) {
  return h("ul", { class: "review-reviewers" }, queue.progress.map((p) => h("li", { "data-reviewer": p.reviewer },
    h("span", { class: "mono small" }, p.reviewer), " ",
    progressBar(p.labelled, p.assigned), " ",
    h("span", { class: "num small" }, t("review.progress", { done: p.labelled, total: p.assigned })))));
}

/** One statistic row: name, value, CI, n (a note for an undefined one). */
function statRow(against, s) {
  const small = s.n !== undefined && s.n < 30;  // as everywhere a CI is shown: few rows flagged
  const ci = s.low === null || s.low === undefined ? "–"
    : small ? notInformative(s.note ? s.note.text : `n = ${s.n}`, s.n)
      : `${fmt(s.low)} – ${fmt(s.high)}`;
  return h("tr", {},
    h("td", {}, against),
    h("td", {}, t(`agree.stat.${s.name}`) === `agree.stat.${s.name}` ? s.name : t(`agree.stat.${s.name}`)),
    h("td", { class: "num" }, s.value === null ? h("span", { class: "muted", title: s.note ? s.note.text : "" }, t("agree.undefined")) : fmt(s.value)),
    h("td", { class: "num" }, ci),
    h("td", { class: "num" }, String(s.n)));
}

/** The judge's verdicts against a reviewer's (or their majority's): counts by category. */
function confusionTable(found, against) {
  const cm = found.confusion;
  if (!cm || !cm.categories || cm.categories.length > 6) return null;
  const head = [h("th", { scope: "col" }, ""), ...cm.categories.map((c) => h("th", { scope: "col", class: "num" }, fmt(c, 0)))];
  return h("table", { class: "runs confusion", "data-against": found.against },
    h("caption", {}, t("agree.confusion", { who: against })),
    h("thead", {}, h("tr", {}, head)),
    h("tbody", {}, cm.counts.map((row, i) => h("tr", {},
      h("th", { scope: "row", class: "num" }, fmt(cm.categories[i], 0)),
      row.map((n) => h("td", { class: "num" }, String(n)))))));
}

function groupTable(metric, group) {
  const rows = [];
  const confusions = [];
  for (const a of group.agreement) {
    const against = a.against === "majority" ? t("agree.majority") : a.against;
    for (const s of a.statistics) rows.push(statRow(against, s));
    confusions.push(confusionTable(a, against));
  }
  if (group.reviewers_alpha) rows.push(statRow(t("agree.reviewers"), group.reviewers_alpha));
  const cm = group.calibrated_mean;
  if (cm) {
    rows.push(statRow(t("agree.corrected"), { name: "calibrated_mean", value: cm.value, low: cm.low, high: cm.high, n: cm.n_labelled }));
  }
  const named = t(`agree.group.${group.language}`);
  const where = named === `agree.group.${group.language}` ? group.language : named;
  return h("div", { class: "table-wrap", "data-language": group.language },
    h("table", { class: "runs agreement", "data-metric": metric.metric, "data-language": group.language },
      h("caption", {}, `${t("agree.caption", { metric: metric.metric, labelled: group.labelled_rows, rows: group.rows })} · ${where}`),
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, t("agree.against")), h("th", { scope: "col" }, t("agree.statistic")),
        h("th", { scope: "col" }, t("agree.value")), h("th", { scope: "col" }, t("agree.ci")),
        h("th", { scope: "col" }, "n"))),
      h("tbody", {}, rows)),
    confusions.some(Boolean) ? h("div", { class: "confusions" }, confusions.filter(Boolean)) : null);
}

/** Per group of rows (all, then each language): the statistics and the confusion counts. */
function agreementTable(metric) {
  const groups = metric.groups || [];
  if (!groups.length) return h("p", { class: "muted small" }, t("agree.none"));
  return h("div", { class: "agreement-metric" }, groups.map((group) => groupTable(metric, group)));
}

export class ReviewView {
  constructor(root, id, params) {
    this.root = root;
    this.id = id;
    this.params = params;
    this.stopped = false;
  }

  async start() {
    const run = encodeURIComponent(this.id);
    const [info, user] = await Promise.all([get(`/evaluate/runs/${run}`), whoami()]);
    if (this.stopped) return;
    this.run = info;
    this.user = user;
    this.queues = h("section", { id: "review-queues", "aria-labelledby": "queues-title" });
    this.agreement = h("section", { id: "review-agreement", "aria-labelledby": "agree-title" });
    this.root.replaceChildren(
      h("p", {}, h("a", { href: `#/runs/${run}` }, t("row.back", { id: this.id.slice(0, 12) }))),
      h("h1", {}, t("review.title", { run: runTitle(info) })),
      h("p", { class: "muted" }, t("review.intro")),
      ...[this.queues, MAKERS.has(user.role) ? this.form() : null, this.agreement].filter(Boolean));
    await Promise.all([this.loadQueues(), this.loadAgreement()]);
    this.root.focus();
  }

  async loadQueues() {
    const run = encodeURIComponent(this.id);
    const queues = await get(`/evaluate/runs/${run}/reviews`);
    if (this.stopped) return;
    const body = queues.map((q) => {
      const mine = q.progress.some((p) => p.reviewer === this.user.name);
      const open = mine ? h("button", { type: "button", class: "open-queue", "data-queue": q.id, onclick: async () => {
        const row = await nextRow(this.id, q);
        if (row !== null) location.hash = `#/runs/${run}/rows/${row}?queue=${q.id}`;
      } }, t("review.open")) : h("span", { class: "muted small" }, t("review.notYours"));
      return h("tr", { "data-queue": q.id },
        h("td", { class: "num" }, `#${q.id}`),
        h("td", {}, q.metric),
        h("td", {}, t(`review.rule.${q.rule}`)),
        h("td", { class: "num" }, t("review.rows", { rows: q.rows, eligible: q.eligible, k: q.options.k })),
        h("td", {}, progressCell(q)),
        h("td", {}, open));
    });
    this.queues.replaceChildren(
      h("h2", { id: "queues-title" }, t("review.queues")),
      queues.length
        ? h("div", { class: "table-wrap" }, h("table", { class: "runs review-queues" },
          h("thead", {}, h("tr", {}, ["#", t("review.metric"), t("review.rule"), t("review.rowsCol"), t("review.progressCol"), ""]
            .map((text) => h("th", { scope: "col" }, text)))),
          h("tbody", {}, body)))
        : h("p", { class: "muted" }, t("review.none")));
  }

  /** The agreement of the judge with the labels (GET .../agreement), a table per metric. */
  async loadAgreement() {
    const run = encodeURIComponent(this.id);
    let found;
    try {
      found = await get(`/evaluate/runs/${run}/agreement`);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.agreement.replaceChildren(h("h2", { id: "agree-title" }, t("agree.title")), h("p", { class: "error" }, t("error", { message: error.message })));
      return;
    }
    if (this.stopped) return;
    const labelled = found.metrics.filter((m) => m.labels > 0);
    this.agreement.replaceChildren(
      h("h2", { id: "agree-title" }, t("agree.title")),
      h("p", { class: "muted small" }, t("agree.intro")),
      ...(labelled.length ? labelled.map(agreementTable) : [h("p", { class: "muted" }, t("agree.noLabels"))]));
  }

  form() {
    const metric = h("select", { id: "q-metric", name: "metric" }, this.run.metrics.map((m) => h("option", { value: m }, m)));
    const rule = h("select", { id: "q-rule", name: "rule" }, RULES.map((r) => h("option", { value: r }, t(`review.rule.${r}`))));
    const count = h("input", { id: "q-count", name: "count", type: "number", min: 1, value: 20, class: "short" });
    const reviewers = h("input", { id: "q-reviewers", name: "reviewers", type: "text", value: this.user.role === "admin" ? this.user.name : "" });
    const k = h("input", { id: "q-k", name: "k", type: "number", min: 1, value: 1, class: "short" });
    const seed = h("input", { id: "q-seed", name: "seed", type: "number", min: 0, value: 0, class: "short" });
    const threshold = h("input", { id: "q-threshold", name: "threshold", type: "number", step: "any", class: "short" });
    const strata = h("input", { id: "q-strata", name: "strata", type: "number", min: 1, value: 5, class: "short" });
    const note = h("p", { class: "error", role: "alert", id: "q-error" });
    return h("section", { "aria-labelledby": "new-queue" },
      h("h2", { id: "new-queue" }, t("review.new")),
      h("form", { class: "queue-form filters", onsubmit: async (event) => {
        event.preventDefault();
        note.textContent = "";
        const body = {
          metric: metric.value, rule: rule.value, count: Number(count.value), k: Number(k.value), seed: Number(seed.value),
          reviewers: reviewers.value.split(/[,，\s]+/).filter(Boolean), strata: Number(strata.value),
        };
        if (threshold.value !== "") body.threshold = Number(threshold.value);
        try {
          await post(`/evaluate/runs/${encodeURIComponent(this.id)}/reviews`, body);
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          note.textContent = t("error", { message: error.message });
          return;
        }
        announce(t("review.made"));
        await this.loadQueues();
      } },
        field("q-metric", t("review.metric"), metric),
        field("q-rule", t("review.rule"), rule),
        field("q-count", t("review.count"), count),
        field("q-reviewers", t("review.reviewers"), reviewers, t("review.reviewersHint")),
        field("q-k", t("review.k"), k),
        field("q-seed", t("review.seed"), seed),
        field("q-threshold", t("review.threshold"), threshold, t("review.thresholdHint")),
        field("q-strata", t("review.strata"), strata),
        h("button", { type: "submit" }, t("review.make"))),
      note);
  }

  stop() {
    this.stopped = true;
  }
}
