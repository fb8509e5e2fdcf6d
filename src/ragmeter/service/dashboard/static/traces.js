// The Traces views: production traces an instrumented app sent (`#/traces`), newest first,
// filtered by service, status, time range, text in the question, a metric's score below a
// value, session or user id, reviewers' flags (the filters live in the URL); and one trace
// (`#/traces/<id>`): its span tree, the row fields it became, its scores with the judge's
// reasoning and who flagged it (flag_panel.js). Traces are saved as a dataset version (the
// filtered list, flagged ones among them, or those picked) by users who may add datasets.
import { ApiError, get, post, query } from "./api.js";
import { spanBar } from "./chart.js";
import { announce, h } from "./dom.js";
import { FLAG_LABELS, FlagPanel, flagMarker } from "./flag_panel.js";
import { t } from "./i18n.js";
import { whoami } from "./label_panel.js";
import { replaceParams } from "./router.js";
import { alertBox, longText, pageOf, pager, table, when } from "./widgets.js";

const PAGE = 50;
const STATUSES = ["ok", "error", "unset"];
/** the time ranges offered, in hours (none: any time) */
const RANGES = { "1h": 1, "24h": 24, "7d": 24 * 7, "30d": 24 * 30 };
/** the list's filters: the URL's names, each with the API's */
const FILTERS = { service: "service", status: "status", range: null, text: "text", metric: "metric",
  below: "below", session: "session_id", user: "user_id", flagged: null };
/** the most traces one dataset version is made of (the API's limit), oldest first */
const SAVE_MAX = 10000;
/** roles that may add dataset versions */
const MAKERS = new Set(["admin", "member"]);
const enc = encodeURIComponent;

function fmt(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

/** A span or trace's start (Unix epoch nanoseconds) as a local date and time. */
function whenNs(ns) {
  return when(new Date(Number(ns) / 1e6).toISOString());
}

/** A duration in milliseconds as people read it: 0.42 ms, 35 ms, 1.3 s. */
export function duration(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1) return t("traces.ms", { n: ms.toFixed(2) });
  if (ms < 1000) return t("traces.ms", { n: ms < 10 ? ms.toFixed(1) : Math.round(ms) });
  return t("traces.s", { n: (ms / 1000).toFixed(ms < 10000 ? 2 : 1) });
}

function tokens(trace) {
  if (trace.input_tokens === null && trace.output_tokens === null) return h("span", { class: "muted" }, "–");
  return h("span", { class: "num", title: t("traces.tokenSplit", { i: trace.input_tokens ?? 0, o: trace.output_tokens ?? 0 }) },
    String((trace.input_tokens ?? 0) + (trace.output_tokens ?? 0)));
}

function statusBadge(status) {
  return h("span", { class: `badge span-${status}`, "data-status": status }, t(`traces.status.${status}`));
}

/** A trace's scores as chips: `metric 0.80`, a null one with its reason on hover. */
function scoreChips(scores) {
  if (!scores.length) return h("span", { class: "muted small" }, t("traces.notScored"));
  return h("ul", { class: "chips scores" }, scores.map((s) => h("li", {
    class: s.score === null ? "chip score null" : s.passing === false ? "chip score fail" : "chip score",
    "data-metric": s.metric, title: s.score === null ? s.reason || "" : s.rule ? t("traces.byRule", { rule: s.rule }) : null },
  `${s.metric} `, h("span", { class: "num" }, s.score === null ? t("run.null") : fmt(s.score)))));
}

/** The time range's start in Unix epoch nanoseconds (exact: a BigInt's digits), or "". */
function sinceNs(range) {
  const hours = RANGES[range];
  if (!hours) return "";
  return String(BigInt(Date.now() - hours * 3600 * 1000) * 1000000n);
}

/** The API's filters from the URL's parameters (the time range made a start time now). */
function apiFilters(params) {
  const out = {};
  for (const [name, api] of Object.entries(FILTERS)) {
    const value = (params.get(name) || "").trim();
    if (!value) continue;
    if (name === "range") {
      const since = sinceNs(value);
      if (since) out.since_ns = since;
    } else if (name === "flagged") {
      // "yes": flagged by anyone, "no": by no one, a label: flagged with it
      if (value === "yes" || value === "no") out.flagged = value === "yes";
      else if (FLAG_LABELS.includes(value)) out.flag = value;
    } else out[api] = value;
  }
  if (out.below !== undefined && !out.metric) delete out.below; // a bound needs its metric
  return out;
}

/** The "save as dataset" box: a name, then saving what `pick()` names (trace ids, or the
 * list's filters); the answer says which version it made, with a link to it. */
function saveBox({ id, buttons }) {
  const name = h("input", { id: `${id}-name`, type: "text", name: "dataset", maxlength: 200, placeholder: t("traces.saveNameHint") });
  const outcome = h("div", { id: `${id}-outcome`, "aria-live": "polite" });
  const save = async (button, body) => {
    outcome.replaceChildren();
    if (!name.value.trim()) {
      outcome.append(alertBox(t("traces.needName")));
      name.focus();
      return;
    }
    button.disabled = true;
    try {
      const made = await post("/traces/dataset", { name: name.value.trim(), ...body() });
      const tag = `${made.name}@${made.version}`;
      const text = t(made.reused ? "traces.savedReused" : made.rows === 1 ? "traces.saved1" : "traces.saved", { n: made.rows, name: tag });
      outcome.append(h("p", { class: "ok", role: "status" }, text, " ", h("a", { href: `#/datasets/${enc(tag)}` }, t("datasets.see"))));
      announce(text);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      outcome.append(alertBox(error.message, `${id}-error`));
    } finally {
      button.disabled = false;
    }
  };
  const made = buttons.map((b) => h("button", { type: "button", id: b.id, class: b.secondary ? "secondary" : null,
    disabled: b.disabled, onclick: (e) => save(e.currentTarget, b.body) }, b.label));
  return { box: h("section", { class: "card save-traces", "aria-labelledby": `${id}-title` },
    h("h2", { id: `${id}-title` }, t("traces.saveTitle")),
    h("p", { class: "muted small" }, t("traces.saveHelp")),
    h("form", { class: "filters", onsubmit: (e) => e.preventDefault() },
      h("label", { for: `${id}-name` }, t("traces.saveName")), name, made),
    outcome), buttons: made };
}

/** Who the page acts as ({name, role}), or null when that cannot be read. */
async function me() {
  try {
    return await whoami();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return null;
  }
}

/** Whether the caller may add dataset versions (a viewer or reviewer may not). */
async function mayMake() {
  const user = await me();
  return Boolean(user && MAKERS.has(user.role));
}

/** `#/traces`: the filters, the save box, then a page of traces. */
export class TracesView {
  constructor(root, params) {
    this.root = root;
    this.params = params;
    this.stopped = false;
    this.picked = new Set();
  }

  async start() {
    this.body = h("div", { id: "traces-body", "aria-live": "polite" });
    const maker = await mayMake();
    if (this.stopped) return;
    this.saver = maker ? saveBox({ id: "tr-save", buttons: [
      { id: "save-filtered", label: t("traces.saveFiltered", { n: 0 }), body: () => ({ filters: apiFilters(this.params), limit: SAVE_MAX }) },
      { id: "save-picked", label: t("traces.savePicked", { n: 0 }), secondary: true, disabled: true,
        body: () => ({ trace_ids: [...this.picked] }) },
    ] }) : null;
    this.root.replaceChildren(...[
      h("section", { class: "view-head" }, h("h1", {}, t("traces.title")), h("p", { class: "muted" }, t("traces.intro")), this.filters()),
      this.saver ? this.saver.box : null, this.body].filter(Boolean));
    await this.load();
  }

  stop() {
    this.stopped = true;
  }

  filters() {
    const p = this.params;
    const text = (name, hint, type = "search") => h("input", { id: `t-${name}`, type, name, value: p.get(name) || "", placeholder: hint, maxlength: 200 });
    const fields = {
      service: text("service", t("traces.serviceHint")),
      status: h("select", { id: "t-status", name: "status" }, h("option", { value: "" }, t("runs.any")),
        STATUSES.map((s) => h("option", { value: s, selected: p.get("status") === s }, t(`traces.status.${s}`)))),
      range: h("select", { id: "t-range", name: "range" }, h("option", { value: "" }, t("traces.range.any")),
        Object.keys(RANGES).map((r) => h("option", { value: r, selected: p.get("range") === r }, t(`traces.range.${r}`)))),
      text: text("text", t("traces.textHint")),
      metric: text("metric", t("traces.metricHint")),
      below: h("input", { id: "t-below", type: "number", name: "below", step: "any", class: "short", value: p.get("below") || "" }),
      session: text("session", ""),
      user: text("user", ""),
      flagged: h("select", { id: "t-flagged", name: "flagged" }, h("option", { value: "" }, t("runs.any")),
        ["yes", "no", ...FLAG_LABELS].map((v) => h("option", { value: v, selected: p.get("flagged") === v },
          t(FLAG_LABELS.includes(v) ? `flags.label.${v}` : `flags.filter.${v}`)))),
    };
    // every field read at once: typing in two fields quickly keeps both
    const read = () => this.change(Object.fromEntries(Object.entries(fields).map(([name, input]) => [name, input.value.trim()])));
    let typing = null;
    for (const input of Object.values(fields)) {
      if (input.tagName === "SELECT") input.addEventListener("change", read);
      else input.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(read, 300); });
    }
    const clear = h("button", { type: "button", class: "secondary", onclick: () => {
      for (const input of Object.values(fields)) input.value = "";
      this.change(Object.fromEntries(Object.keys(fields).map((name) => [name, ""])));
    } }, t("runs.clear"));
    const labelled = (name) => h("span", { class: "pair" }, h("label", { for: `t-${name}` }, t(`traces.f.${name}`)), fields[name]);
    return h("form", { role: "search", class: "filters traces-filters", onsubmit: (e) => e.preventDefault() },
      Object.keys(fields).map(labelled), clear);
  }

  change(values) {
    for (const [name, value] of Object.entries(values)) {
      if (value) this.params.set(name, value);
      else this.params.delete(name);
    }
    this.params.delete("page");
    replaceParams("traces", this.params);
    this.load();
  }

  async load() {
    const offset = (pageOf(this.params) - 1) * PAGE;
    const ticket = (this.ticket = (this.ticket || 0) + 1); // only the latest answer is shown
    let page;
    try {
      page = await get(`/traces${query({ ...apiFilters(this.params), offset, limit: PAGE })}`);
    } catch (error) {
      if (this.stopped || ticket !== this.ticket || error.status === 401) return;
      this.body.replaceChildren(alertBox(t("error", { message: error.message })));
      return;
    }
    if (this.stopped || ticket !== this.ticket) return;
    if (this.saver) {
      const button = this.saver.buttons[0];
      button.disabled = page.total === 0;
      button.textContent = t(page.total > SAVE_MAX ? "traces.saveFirst" : "traces.saveFiltered", { n: Math.min(page.total, SAVE_MAX) });
    }
    if (!page.items.length) {
      const filtered = Object.keys(FILTERS).some((name) => this.params.get(name));
      this.body.replaceChildren(filtered ? h("div", { class: "empty" }, h("p", {}, t("traces.noMatch")))
        : h("div", { class: "empty" }, h("p", { class: "big" }, t("traces.empty")), h("p", { class: "muted" }, t("traces.emptyHint"))));
      return;
    }
    const head = [this.saver ? t("traces.pick") : null, t("traces.col.time"), t("traces.col.service"), t("traces.col.name"),
      t("traces.col.question"), t("traces.col.latency"), t("traces.col.model"), t("traces.col.tokens"),
      t("traces.col.status"), t("traces.col.scores")].filter((x) => x !== null);
    const caption = page.total === 1 ? t("traces.count1") : t("traces.count", { n: page.total });
    const go = (step) => {
      this.params.set("page", String(pageOf(this.params) + step));
      replaceParams("traces", this.params);
      this.load();
    };
    this.body.replaceChildren(h("div", {}, table("traces", caption, head, page.items.map((tr) => this.row(tr))),
      pager({ offset, shown: page.items.length, size: PAGE, total: page.total, label: t("traces.pages"), go })));
  }

  row(tr) {
    const href = `#/traces/${enc(tr.trace_id)}`;
    const short = tr.trace_id.slice(0, 12);
    return h("tr", { "data-trace": tr.trace_id, class: tr.status === "error" ? "failed" : null },
      this.saver ? h("td", {}, h("input", { type: "checkbox", class: "pick-trace", value: tr.trace_id, checked: this.picked.has(tr.trace_id),
        "aria-label": t("traces.pickLabel", { id: short }), onchange: (e) => this.pick(tr.trace_id, e.currentTarget.checked) })) : null,
      h("td", { class: "nowrap" }, whenNs(tr.start_ns)),
      h("td", { class: "nowrap" }, tr.service || h("span", { class: "muted" }, "–")),
      h("th", { scope: "row", class: "trace-name" }, h("a", { href }, tr.name || t("traces.noRoot")),
        h("span", { class: "mono small muted" }, short),
        tr.complete ? null : h("span", { class: "badge incomplete", title: t("traces.incompleteHint") }, t("traces.incomplete")),
        flagMarker(tr)),
      h("td", { class: "text" }, longText(tr.row.query || "", 160)),
      h("td", { class: "num" }, duration(tr.latency_ms)),
      h("td", { class: "small" }, tr.model || h("span", { class: "muted" }, "–")),
      h("td", {}, tokens(tr)),
      h("td", {}, statusBadge(tr.status)),
      h("td", { class: "scores-cell" }, scoreChips(tr.scores)));
  }

  pick(traceId, checked) {
    if (checked) this.picked.add(traceId);
    else this.picked.delete(traceId);
    const button = this.saver.buttons[1];
    button.textContent = t("traces.savePicked", { n: this.picked.size });
    button.disabled = this.picked.size === 0;
  }
}

/** The documents a trace retrieved: rank, id, score, text. */
function documentsCard(row) {
  const texts = row.retrieved_contexts || [];
  const ids = row.retrieved_ids || [];
  const scores = (row.metadata || {}).document_scores || [];
  const list = texts.length
    ? h("ol", { class: "contexts" }, texts.map((text, i) => h("li", { "data-rank": i + 1 },
      h("div", { class: "context-head" },
        h("span", { class: "num rank" }, `#${i + 1}`),
        ids[i] !== undefined ? h("span", { class: "mono small doc-id" }, ids[i]) : null,
        scores[i] !== undefined && scores[i] !== null ? h("span", { class: "badge rank", title: t("traces.docScoreHint") }, t("traces.docScore", { n: fmt(scores[i]) })) : null),
      longText(text, 600))))
    : h("p", { class: "muted" }, t("row.noContexts"));
  return h("section", { "aria-labelledby": "tr-docs" }, h("h2", { id: "tr-docs" }, t("traces.documents")), list);
}

/** The tool calls in the trace's conversation, each with the result it got. */
function toolsCard(row) {
  const messages = row.messages || [];
  const results = new Map(messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content]));
  const calls = messages.flatMap((m) => m.tool_calls || []);
  if (!calls.length) return null;
  return h("section", { "aria-labelledby": "tr-tools" }, h("h2", { id: "tr-tools" }, t("traces.tools")),
    h("ol", { class: "steps tool-calls" }, calls.map((c) => {
      const fn = c.function || {};
      const result = results.get(c.id);
      return h("li", { "data-tool": fn.name },
        h("span", { class: "mono small" }, `${fn.name}(${fn.arguments ?? ""})`),
        result !== undefined ? h("span", { class: "muted small" }, ` → ${result}`) : null);
    })));
}

function textCard(title, text, id) {
  return h("section", { class: "text-card", "aria-labelledby": id }, h("h2", { id }, title),
    text === null || text === undefined ? h("p", { class: "muted" }, t("row.none")) : longText(text, 1200));
}

/** One score: metric, value, the rule and judge that gave it, and the judge's reasoning. */
function scoreCard(s) {
  const value = s.score === null
    ? h("p", { class: "big null" }, t("run.null"))
    : h("p", { class: s.passing === false ? "big fail" : "big" }, fmt(s.score));
  const facts = [
    s.rule ? t("traces.byRule", { rule: s.rule }) : null,
    s.judge_model ? t("traces.judge", { model: s.judge_model }) : null,
    s.tokens ? t("traces.scoreTokens", { n: s.tokens }) : null,
    s.scored_ns ? t("traces.scoredAt", { when: whenNs(s.scored_ns) }) : null,
  ].filter(Boolean);
  return h("section", { class: "metric-card result-card", "data-metric": s.metric },
    h("h3", {}, s.metric), value,
    facts.length ? h("p", { class: "muted small" }, facts.join(" · ")) : null,
    s.score === null ? h("p", { class: "reason" }, h("span", { class: "badge kind" }, t(`kind.${s.error_kind || "none"}`)), " ", s.reason || t("run.noReason")) : null,
    s.feedback ? h("div", { class: "feedback-box" }, h("h4", {}, t("traces.reasoning")), longText(s.feedback, 800)) : null);
}

/** `children` pushed right by `depth` levels (through the CSSOM: the page's CSP takes no
 * inline style attribute). */
function indent(depth, ...children) {
  const box = h("span", { class: "indent" }, ...children);
  box.style.paddingLeft = `${depth * 1.4}rem`;
  return box;
}

/** A span's attributes, resource and events as key-value tables. */
function spanDetail(span) {
  const pairs = (object) => Object.entries(object || {}).map(([k, v]) => h("tr", {},
    h("th", { scope: "row", class: "mono small" }, k),
    h("td", { class: "text" }, longText(typeof v === "string" ? v : JSON.stringify(v), 400))));
  const block = (title, object) => Object.keys(object || {}).length
    ? [h("h4", {}, title), h("table", { class: "attrs" }, h("tbody", {}, pairs(object)))] : null;
  return h("div", { class: "span-detail", id: `span-${span.span_id}-detail` },
    h("p", { class: "muted small" }, t("traces.spanIds", { id: span.span_id, parent: span.parent_id || "–" }),
      span.status_message ? [" · ", h("span", { class: "error" }, span.status_message)] : null),
    block(t("traces.attributes"), span.attributes) || h("p", { class: "muted small" }, t("traces.noAttributes")),
    block(t("traces.resource"), span.resource),
    span.events.length ? [h("h4", {}, t("traces.events")), h("ul", { class: "events" }, span.events.map((e) =>
      h("li", {}, h("span", { class: "mono small" }, e.name), " ", h("span", { class: "muted small" }, JSON.stringify(e.attributes || {})))))] : null);
}

/** `#/traces/<id>`: facts, span tree, the row fields, the scores, and saving it. */
export class TraceView {
  constructor(root, id, params) {
    this.root = root;
    this.id = id;
    this.params = params;
    this.stopped = false;
  }

  stop() {
    this.stopped = true;
  }

  async start() {
    this.root.replaceChildren(h("p", { class: "loading" }, t("loading")));
    const [found, user] = await Promise.all([get(`/traces/${enc(this.id)}`), me()]);
    if (this.stopped) return;
    const maker = Boolean(user && MAKERS.has(user.role));
    const tr = found.trace;
    const row = tr.row || {};
    const fact = (label, value) => h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, value));
    const saver = maker ? saveBox({ id: "tr-one", buttons: [{ id: "save-trace", label: t("traces.saveOne"), body: () => ({ trace_ids: [tr.trace_id] }) }] }) : null;
    this.root.replaceChildren(...[
      h("p", {}, h("a", { href: "#/traces" }, t("traces.back"))),
      h("h1", {}, t("traces.one", { name: tr.name || t("traces.noRoot") })),
      h("dl", { class: "facts" },
        fact(t("traces.id"), h("span", { class: "mono" }, tr.trace_id)),
        fact(t("traces.col.service"), tr.service || "–"),
        fact(t("traces.col.time"), whenNs(tr.start_ns)),
        fact(t("traces.col.latency"), duration(tr.latency_ms)),
        fact(t("traces.col.status"), statusBadge(tr.status)),
        fact(t("traces.col.model"), tr.model || "–"),
        fact(t("traces.col.tokens"), t("traces.tokenSplit", { i: tr.input_tokens ?? 0, o: tr.output_tokens ?? 0 })),
        tr.session_id ? fact(t("traces.f.session"), h("a", { href: `#/traces?session=${enc(tr.session_id)}` }, tr.session_id)) : null,
        tr.user_id ? fact(t("traces.f.user"), h("a", { href: `#/traces?user=${enc(tr.user_id)}` }, tr.user_id)) : null),
      new FlagPanel(tr.trace_id, found.flags || [], user).box,
      h("h2", {}, t("traces.spans", { n: found.spans.length })),
      this.tree(found.spans, tr),
      h("h2", {}, t("traces.rowTitle")),
      h("p", { class: "muted small" }, t("traces.rowHelp")),
      h("div", { class: "row-texts" },
        textCard(t("traces.question"), row.query, "tr-query"),
        textCard(t("traces.answer"), row.response, "tr-response"),
        row.reference !== undefined ? textCard(t("row.reference"), row.reference, "tr-reference") : null),
      documentsCard(row),
      toolsCard(row),
      h("h2", {}, t("traces.scores")),
      tr.scores.length ? h("div", { class: "metric-cards result-cards", id: "trace-scores" }, tr.scores.map(scoreCard))
        : h("p", { class: "muted", id: "trace-scores" }, t("traces.notScoredYet")),
      saver ? saver.box : null].filter(Boolean));
  }

  /** The spans in tree order, indented by depth, each with its kind, a bar of when it ran
   * within the trace, its duration and status; a click shows its attributes. */
  tree(spans, tr) {
    const start = Math.min(...spans.map((s) => Number(s.start_ns)));
    const end = Math.max(...spans.map((s) => Number(s.end_ns)));
    const rows = spans.flatMap((span) => {
      const detailRow = h("tr", { class: "span-detail-row", hidden: true }, h("td", { colspan: 5 }, spanDetail(span)));
      const toggle = h("button", { type: "button", class: "link span-name", "aria-expanded": "false",
        "aria-controls": `span-${span.span_id}-detail`, onclick: () => {
          detailRow.hidden = !detailRow.hidden;
          toggle.setAttribute("aria-expanded", String(!detailRow.hidden));
        } }, span.name);
      const ms = (Number(span.end_ns) - Number(span.start_ns)) / 1e6;
      return [h("tr", { "data-span": span.span_id, "data-depth": span.depth, class: span.status === "error" ? "failed" : null },
        h("th", { scope: "row", class: "span-cell" }, indent(span.depth,
          span.depth ? h("span", { class: "muted", "aria-hidden": "true" }, "└ ") : null, toggle)),
        h("td", {}, h("span", { class: `badge span-kind kind-${span.kind.toLowerCase()}` }, span.kind)),
        h("td", {}, spanBar(Number(span.start_ns) - start, Number(span.end_ns) - start, end - start)),
        h("td", { class: "num" }, duration(ms)),
        h("td", {}, statusBadge(span.status))), detailRow];
    });
    const head = [t("traces.span"), t("traces.kind"), t("traces.timeline", { total: duration(tr.latency_ms) }), t("traces.duration"), t("traces.col.status")];
    return h("div", { id: "span-tree" }, table("spans", t("traces.treeHint"), head, rows));
  }
}
