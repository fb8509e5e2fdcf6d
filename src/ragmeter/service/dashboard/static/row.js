// The Row view (`#/runs/<id>/rows/<index>`): query, response and reference with a word diff of
// the response against the reference, the retrieved contexts in rank order with relevance
// marked, and per metric its score with the judge's reasoning (statements and verdicts,
// generated questions and their cosines, per-context verdicts, the 0-5 feedback).
import { get } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { LabelPanel } from "./label_panel.js";

/** Tokens compared by the diff, per side: past this the rest is shown undiffed (an LCS table
 * is tokens x tokens, so a 100 KB response must not reach it whole). */
export const DIFF_TOKENS = 1500;
const TOKEN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\s\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|\s+/g;
// which question a verdict answers, by metric (names normalised) and group kind
const QUESTIONS = {
  faithfulness: { response_statements: "detail.q.supported" },
  contextrecall: { reference_statements: "detail.q.inContexts" },
  answercorrectness: { response_statements: "detail.q.inReference", reference_statements: "detail.q.inResponse" },
  contextprecision: { contexts: "detail.q.useful" },
  agentgoalaccuracy: { goal: "detail.q.reached" },
  topicadherence: { topics_refused: "detail.q.refused", topics_in_reference: "detail.q.inTopics" },
  toolargumentcorrectness: { tool_calls: "detail.q.argsRight" },
  conversationrelevancy: { turns: "detail.q.relevant" },
  knowledgeretention: { turns: "detail.q.retains" },
};

/** Texts longer than this scroll in their own box (a focusable region, for the keyboard). */
const LONG_TEXT = 600;
const COUNTS = new Set(["tp", "fp", "fn"]);
const FLAGS = new Set(["noncommittal", "judged_against_reference", "against_reference"]);

function fmt(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

/** Word-level diff of `after` against `before`: [{op: "same"|"add"|"del", text}] (LCS over
 * words, whitespace and single Han characters; common ends trimmed first; each side cut to
 * DIFF_TOKENS tokens, the rest returned in `rest`). */
export function wordDiff(before, after) {
  const a = before.match(TOKEN) || [];
  const b = after.match(TOKEN) || [];
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start += 1;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA -= 1; endB -= 1; }
  const cut = Math.max(endA - start, endB - start) > DIFF_TOKENS;
  const stopA = Math.min(endA, start + DIFF_TOKENS);
  const stopB = Math.min(endB, start + DIFF_TOKENS);
  const parts = [];
  const push = (op, text) => {
    const last = parts[parts.length - 1];
    if (last && last.op === op) last.text += text;
    else parts.push({ op, text });
  };
  if (start) push("same", a.slice(0, start).join(""));
  lcs(a.slice(start, stopA), b.slice(start, stopB), push);
  if (cut) return { parts, rest: b.slice(stopB).join(""), cut: true };
  if (endA < a.length) push("same", a.slice(endA).join(""));
  return { parts, rest: "", cut: false };
}

function lcs(a, b, push) {
  const n = a.length;
  const m = b.length;
  const width = m + 1;
  const table = new Uint16Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      table[i * width + j] = a[i] === b[j]
        ? table[(i + 1) * width + j + 1] + 1
        : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
    }
  }
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { push("same", a[i]); i += 1; j += 1; }
    else if (table[(i + 1) * width + j] >= table[i * width + j + 1]) { push("del", a[i]); i += 1; }
    else { push("add", b[j]); j += 1; }
  }
  while (i < n) { push("del", a[i]); i += 1; }
  while (j < m) { push("add", b[j]); j += 1; }
}

function textBlock(label, length, ...content) {
  const long = length > LONG_TEXT;
  return h("p", { class: long ? "text scroll" : "text", tabindex: long ? "0" : null, role: long ? "region" : null, "aria-label": long ? label : null }, ...content);
}

function textCard(title, text, id) {
  return h("section", { class: "text-card", "aria-labelledby": id },
    h("h2", { id }, title),
    text === null || text === undefined
      ? h("p", { class: "muted" }, t("row.none"))
      : textBlock(title, text.length, text));
}

function diffCard(response, reference) {
  if (typeof response !== "string" || typeof reference !== "string") return null;
  const { parts, rest, cut } = wordDiff(reference, response);
  const nodes = parts.map((p) => {
    if (p.op === "add") return h("ins", { title: t("row.diff.added") }, p.text);
    if (p.op === "del") return h("del", { title: t("row.diff.removed") }, p.text);
    return p.text;
  });
  const block = textBlock(t("row.diff"), response.length + reference.length, nodes, rest);
  block.classList.add("diff");
  return h("section", { class: "text-card wide", "aria-labelledby": "row-diff" },
    h("h2", { id: "row-diff" }, t("row.diff")),
    h("p", { class: "legend muted small" }, h("ins", {}, t("row.diff.added")), " ", h("del", {}, t("row.diff.removed"))),
    cut ? h("p", { class: "muted small" }, t("row.diff.cut", { n: DIFF_TOKENS })) : null,
    block);
}

function relevanceBadge(context, match) {
  if (match === null || context.relevant === null) return h("span", { class: "badge rel-unknown" }, t("row.rel.unknown"));
  const grade = context.grade !== null && context.grade !== undefined
    ? h("span", { class: "muted small" }, " ", t("row.rel.grade", { grade: context.grade }))
    : null;
  return context.relevant
    ? h("span", { class: "badge rel-yes" }, "✓ ", t("row.rel.yes"), grade)
    : h("span", { class: "badge rel-no" }, "✗ ", t("row.rel.no"), grade);
}

function contextsCard(detail) {
  const found = detail.contexts.filter((c) => c.relevant).length;
  const note = detail.match === null
    ? t("row.match.none")
    : t(`row.match.${detail.match}`, { found, total: detail.relevant_total ?? 0, level: detail.relevance_level ?? 1 });
  const list = detail.contexts.length
    ? h("ol", { class: "contexts" }, detail.contexts.map((c) => h("li", { "data-rank": c.rank, class: c.relevant ? "relevant" : null },
      h("div", { class: "context-head" },
        h("span", { class: "num rank" }, `#${c.rank}`),
        relevanceBadge(c, detail.match),
        c.id !== null ? h("span", { class: "mono small" }, c.id) : null),
      c.text !== null ? textBlock(`#${c.rank}`, c.text.length, c.text) : null)))
    : h("p", { class: "muted" }, t("row.noContexts"));
  return h("section", { "aria-labelledby": "row-contexts" },
    h("h2", { id: "row-contexts" }, t("row.contexts")),
    h("p", { class: "muted small", id: "row-match" }, note),
    list);
}

const json = (value) => (value === undefined ? "" : JSON.stringify(value));

function callText(call) {
  return call ? `${call.name}(${json(call.arguments)})` : "–";
}

/** Expected and actual calls side by side, each argument diffed; then every step. */
function trajectoryCard(trajectory) {
  const pairs = trajectory.pairs.length
    ? h("div", { class: "table-wrap" }, h("table", { class: "calls" },
      h("caption", {}, t("row.calls.caption")),
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, t("row.calls.expected")),
        h("th", { scope: "col" }, t("row.calls.actual")),
        h("th", { scope: "col" }, t("row.calls.status")))),
      h("tbody", {}, trajectory.pairs.map((pair) => h("tr", { "data-status": pair.status },
        h("td", { class: "mono small" }, callText(pair.expected)),
        h("td", { class: "mono small" }, callText(pair.actual),
          pair.arguments.some((a) => !a.equal)
            ? h("ul", { class: "arg-diff" }, pair.arguments.filter((a) => !a.equal).map((a) => h("li", {},
              h("span", { class: "mono" }, a.key || t("row.calls.args")), ": ",
              h("del", {}, json(a.expected) || "–"), " → ", h("ins", {}, json(a.actual) || "–"))))
            : null),
        h("td", {}, h("span", { class: `badge call-${pair.status}` }, t(`row.calls.${pair.status}`))))))))
    : h("p", { class: "muted small" }, t("row.calls.noneExpected"));
  const steps = h("ol", { class: "steps" }, trajectory.steps.map((step) => h("li", { "data-role": step.role },
    h("span", { class: "badge role" }, t(`row.role.${step.role}`)),
    step.content ? textBlock(step.role, step.content.length, step.content) : null,
    step.calls.length
      ? h("ul", { class: "step-calls" }, step.calls.map((call) => h("li", {},
        h("span", { class: "mono small" }, callText(call)),
        call.result !== null ? h("span", { class: "muted small" }, ` → ${call.result}`) : null)))
      : null)));
  return h("section", { "aria-labelledby": "row-trajectory" },
    h("h2", { id: "row-trajectory" }, t("row.trajectory")),
    pairs,
    h("h3", {}, t("row.steps")),
    steps);
}

function verdictMark(verdict) {
  if (verdict === true) return h("span", { class: "verdict yes", role: "img", "aria-label": t("row.verdict.yes") }, "✓");
  if (verdict === false) return h("span", { class: "verdict no", role: "img", "aria-label": t("row.verdict.no") }, "✗");
  return h("span", { class: "verdict none", "aria-hidden": "true" }, "•");
}

function itemValue(kind, value) {
  if (value === null || value === undefined) return null;
  if (kind === "contexts") return h("span", { class: "num muted small" }, t("detail.rank", { n: value }));
  if (kind === "feedback") return h("span", { class: "num small" }, t("detail.score05", { n: fmt(value, 1) }));
  if (kind === "task") return h("span", { class: "num small" }, t("detail.completion", { n: fmt(value) }));
  return h("span", { class: "num small" }, t("detail.cosine", { n: fmt(value) }));
}

function groupBlock(metric, group) {
  const normal = metric.toLowerCase().replace(/\(.*$/, "").replace(/[^a-z]/g, "");
  const question = (QUESTIONS[normal] || {})[group.kind];
  return h("div", { class: "detail-group", "data-kind": group.kind },
    h("h4", {}, t(`detail.kind.${group.kind}`), question ? h("span", { class: "muted" }, ` — ${t(question)}`) : null),
    group.items.length
      ? h("ul", { class: "detail-items" }, group.items.map((item) => h("li", { class: item.verdict === false ? "no" : null },
        verdictMark(item.verdict),
        h("div", {},
          h("span", { class: "text" }, item.text),
          item.reason ? h("span", { class: "muted small reason" }, item.reason) : null),
        itemValue(group.kind, item.value))))
      : h("p", { class: "muted small" }, t("detail.empty")));
}

function valuesList(values) {
  const entries = Object.entries(values || {});
  if (!entries.length) return null;
  return h("dl", { class: "facts detail-values" }, entries.map(([name, value]) => h("div", { class: "fact" },
    h("dt", {}, t(`detail.value.${name}`)),
    h("dd", { class: "num" }, FLAGS.has(name) ? t(value ? "detail.yes" : "detail.no") : COUNTS.has(name) ? String(value) : fmt(value)))));
}

function resultCard(result) {
  const scored = result.score !== null && result.score !== undefined;
  const passing = result.passing === null || result.passing === undefined ? null
    : h("span", { class: result.passing ? "badge state-done" : "badge state-failed" }, t(result.passing ? "row.pass" : "row.fail"));
  let reasoning = null;
  if (result.details) reasoning = [...result.details.groups.map((g) => groupBlock(result.metric_name, g)), valuesList(result.details.values)];
  else if (result.judged) reasoning = h("p", { class: "muted not-recorded" }, t("row.notRecorded"));
  return h("section", { class: "metric-card result-card", "data-metric": result.metric_name, "aria-label": result.metric_name },
    h("h3", {}, result.metric_name),
    h("p", { class: "big num" }, scored ? fmt(result.score) : h("span", { class: "null" }, t("run.null")), " ", passing),
    scored ? null : h("p", { class: "null-reason" },
      h("span", { class: "badge kind" }, result.error_kind ? t(`kind.${result.error_kind}`) : t("kind.none")), " ",
      h("span", { class: "reason" }, result.error || t("run.noReason"))),
    // the feedback summarises the details: shown only where they are not
    scored && result.feedback && !result.details ? h("p", { class: "muted small reason feedback" }, result.feedback) : null,
    reasoning);
}

export class RowView {
  constructor(root, id, params, index) {
    this.root = root;
    this.id = id;
    this.params = params;
    this.index = index;
    this.stopped = false;
  }

  async start() {
    const run = encodeURIComponent(this.id);
    const detail = await get(`/evaluate/runs/${run}/rows/${encodeURIComponent(this.index)}`);
    if (this.stopped) return;
    this.detail = detail;
    // the labelling panel (users who may label) is read first: it hides the judge's result
    // for its metric until this user has labelled the row, so that is never shown before
    const panel = await LabelPanel.open(this);
    if (this.stopped) return;
    const link = (index, text, rel) => index === null
      ? h("span", { class: "muted", "aria-disabled": "true" }, text)
      : h("a", { href: `#/runs/${run}/rows/${index}`, rel }, text);
    this.root.replaceChildren(
      h("p", {}, h("a", { href: `#/runs/${run}` }, t("row.back", { id: this.id.slice(0, 12) }))),
      h("h1", {}, t("row.title", { n: detail.row_index })),
      h("nav", { class: "row-nav", "aria-label": t("row.nav") },
        link(detail.previous, t("row.prev"), "prev"), link(detail.next, t("row.next"), "next")),
      h("div", { class: "row-texts" },
        textCard(t("run.query"), detail.query, "row-query"),
        textCard(t("run.response"), detail.response, "row-response"),
        textCard(t("row.reference"), detail.reference, "row-reference"),
        diffCard(detail.response, detail.reference)),
      detail.trajectory ? trajectoryCard(detail.trajectory) : contextsCard(detail),
      h("h2", {}, t("row.metrics")),
      h("div", { class: "metric-cards result-cards" }, detail.results.map(resultCard)));
    if (panel) {
      this.panel = panel;
      this.root.querySelector(".row-nav").after(panel.render());
    }
    this.root.focus();
  }

  stop() {
    this.stopped = true;
    if (this.panel) this.panel.stop();
  }
}
