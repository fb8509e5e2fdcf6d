// The online rules in the Monitor view: each rule with which traces it takes, its metrics,
// judge, sample, daily budget and today's spending, delay and where it comes from; a form
// that makes a rule (`#/monitor?rule=new`) or changes one (`?rule=edit:<name>`), the API's
// validation errors next to the field they name; delete with a second click. Rules of
// ragmeter.toml are read-only here. Members make rules and change their own; admins any.
import { ApiError, call, del, post } from "./api.js";
import { progressBar } from "./chart.js";
import { announce, h } from "./dom.js";
import { t } from "./i18n.js";
import { alertBox, table } from "./widgets.js";

/** roles that may make rules (the server decides; this only hides what it would refuse) */
const MAKERS = new Set(["admin", "member"]);
const TEXTS = ["service", "root_name", "span_kind", "judge"];
const NUMBERS = ["sample_rate", "max_requests_per_day", "max_tokens_per_day", "delay_seconds"];
const FIELDS = ["name", ...TEXTS, "filters", "metrics", ...NUMBERS];
const OPS = ["eq", "ne", "in", "contains", "exists", "gt", "ge", "lt", "le"];
/** the API's words for a field where its message does not name the field itself */
const HINTS = [[/judge|\[models/i, "judge"], [/metric/i, "metrics"], [/filter|field '/i, "filters"]];

/** A filter as one line of the form: `field op value`. */
function filterLine(f) {
  if (f.op === "exists") return `${f.field} exists`;
  const value = typeof f.value === "string" ? f.value : JSON.stringify(f.value);
  return `${f.field} ${f.op} ${value}`;
}

/** The lines of the filters box as the API's filters (a value is JSON where it parses). */
function parseFilters(text) {
  return text.split("\n").map((line) => /^(\S+)(?:\s+(\S+))?\s*(.*)$/.exec(line.trim())).filter(Boolean).map(([, field, op = "eq", raw]) => {
    if (op === "exists" || !raw) return { field, op };
    try {
      return { field, op, value: JSON.parse(raw) };
    } catch {
      return { field, op, value: raw };
    }
  });
}

/** The form field an API message names (its first one), or null for the form as a whole. */
function fieldOf(message) {
  const named = FIELDS.find((f) => new RegExp(`(^|[\\s'"])${f}(\\.[\\w.]+)?:`).test(message));
  return named || HINTS.find(([pattern]) => pattern.test(message))?.[1] || null;
}

/** Which traces a rule takes, in words. */
function whichText(r) {
  const which = [r.service ? t("mon.ofService", { name: r.service }) : null, r.root_name ? t("mon.ofRoot", { name: r.root_name }) : null,
    r.span_kind ? t("mon.ofKind", { kind: r.span_kind }) : null, ...r.filters.map(filterLine)].filter(Boolean);
  return which.length ? which.join(" · ") : t("mon.everyTrace");
}

export class RulesPanel {
  /** `root` to draw in; `params` the view's URL parameters; `changed()` after a change
   *  (the view reloads the rules and the metrics they score); `go(params)` to set the URL. */
  constructor(root, params, { changed, go }) {
    this.root = root;
    this.params = params;
    this.changed = changed;
    this.go = go;
  }

  /** Draw `rules` (the API's list) for the user `me` ({name, role}). */
  show(rules, me) {
    this.rules = rules;
    this.me = me;
    const maker = MAKERS.has(me.role);
    const adding = maker ? h("button", { type: "button", id: "new-rule", onclick: () => this.open("new") }, t("rules.new")) : null;
    const chosen = this.params.get("rule");
    const editing = chosen?.startsWith("edit:") ? rules.find((info) => info.rule.name === chosen.slice(5)) : null;
    const form = chosen === "new" || editing ? this.form(editing?.rule) : null;
    this.root.replaceChildren(...[adding ? h("p", { class: "rule-actions" }, adding) : null, form,
      rules.length ? this.table(rules) : h("div", { class: "empty" }, h("p", {}, t("mon.noRules")))].filter(Boolean));
    form?.querySelector("input:not([readonly])")?.focus();
  }

  open(which) {
    if (which) this.params.set("rule", which);
    else this.params.delete("rule");
    this.go(this.params);
    this.show(this.rules, this.me);
  }

  /** May `me` change `info`'s rule? (the server checks again) */
  mayChange(info) {
    if (info.source !== "api") return false;
    return this.me.role === "admin" || (this.me.role === "member" && info.created_by === this.me.name);
  }

  table(rules) {
    const head = ["mon.rule", "mon.which", "run.metric", "mon.judge", "mon.sample", "mon.requestsToday", "mon.tokensToday",
      "rules.delay", "mon.tracesToday", "mon.tracesScored", "rules.actions"].map((k) => t(k));
    const rows = rules.map((info) => {
      const r = info.rule;
      const spend = (used, cap) => h("div", { class: "state-cell" }, progressBar(used, cap), h("span", { class: "num small" }, t("mon.ofCap", { used, cap })));
      return h("tr", { "data-rule": r.name, class: r.enabled ? null : "archived" },
        h("th", { scope: "row" }, r.name, " ", h("span", { class: "muted small", "data-col": "source" }, info.source === "api" ? t("mon.fromApi") : "ragmeter.toml"),
          r.enabled ? null : [" ", h("span", { class: "badge archived" }, t("mon.paused"))]),
        h("td", { class: "small", "data-col": "which" }, whichText(r)),
        h("td", {}, h("ul", { class: "chips" }, r.metrics.map((m) => h("li", { class: "chip" }, m)))),
        h("td", { class: "small" }, r.judge || h("span", { class: "muted" }, t("mon.noJudge"))),
        h("td", { class: "num" }, `${Math.round(r.sample_rate * 1000) / 10}%`),
        h("td", { "data-col": "requests" }, spend(info.requests_today, r.max_requests_per_day)),
        h("td", { "data-col": "tokens" }, spend(info.tokens_today, r.max_tokens_per_day)),
        h("td", { class: "num", "data-col": "delay" }, `${r.delay_seconds} s`),
        h("td", { class: "num", "data-col": "today" }, String(info.traces_today)),
        h("td", { class: "num", "data-col": "scored" }, String(info.traces_scored)),
        h("td", { class: "small", "data-col": "actions" }, this.actions(info)));
    });
    return table("online-rules", t("mon.rulesCaption", { day: rules[0].day }), head, rows);
  }

  actions(info) {
    if (info.source !== "api") return h("span", { class: "muted" }, t("rules.fromToml"));
    if (!this.mayChange(info)) return info.created_by ? h("span", { class: "muted" }, t("rules.by", { name: info.created_by })) : null;
    const name = info.rule.name;
    const sure = h("button", { type: "button", class: "danger", hidden: true, onclick: () => this.remove(name, cell) }, t("rules.sure", { name }));
    const cell = h("div", { class: "rule-buttons" },
      h("button", { type: "button", class: "secondary", onclick: () => this.open(`edit:${name}`) }, t("rules.edit")),
      h("button", { type: "button", class: "secondary", onclick: (e) => { e.target.hidden = true; sure.hidden = false; sure.focus(); } }, t("rules.delete")),
      sure);
    return cell;
  }

  async remove(name, cell) {
    try {
      await del(`/online/rules/${encodeURIComponent(name)}`);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      cell.append(alertBox(error.message));
      return;
    }
    announce(t("rules.deleted", { name }));
    this.changed();
  }

  /** The form for a new rule, or for changing `rule` (its name fixed). */
  form(rule) {
    const controls = {};
    const errors = {};
    const row = (name, label, control, help) => {
      controls[name] = control;
      errors[name] = h("p", { class: "error small", id: `rf-${name}-error`, role: "alert" });
      control.setAttribute("aria-describedby", `rf-${name}-error${help ? ` rf-${name}-help` : ""}`);
      return h("div", { class: "field", "data-field": name }, h("label", { for: `rf-${name}` }, label), control,
        help ? h("p", { class: "muted small", id: `rf-${name}-help` }, help) : null, errors[name]);
    };
    const input = (name, value, extra = {}) => h("input", { id: `rf-${name}`, name, value: value ?? "", ...extra });
    const number = (name, value) => input(name, value, { type: "number", step: "any", inputmode: "decimal" });
    const enabled = h("input", { type: "checkbox", id: "rf-enabled", checked: rule ? rule.enabled : true });
    const note = h("div", { class: "error", role: "alert", id: "rf-error" });
    const body = h("form", { class: "rule-form card", id: "rule-form", novalidate: true, onsubmit: (e) => { e.preventDefault(); this.save(rule, controls, enabled, errors, note); } },
      h("h3", {}, rule ? t("rules.editTitle", { name: rule.name }) : t("rules.newTitle")),
      h("div", { class: "rule-grid" },
        row("name", t("rules.name"), input("name", rule?.name, rule ? { readonly: true } : { required: true }), rule ? null : t("rules.nameHelp")),
        row("metrics", t("rules.metrics"), input("metrics", rule?.metrics.join(", ")), t("rules.metricsHelp")),
        row("judge", t("rules.judge"), input("judge", rule?.judge), t("rules.judgeHelp")),
        row("service", t("rules.service"), input("service", rule?.service)),
        row("root_name", t("rules.rootName"), input("root_name", rule?.root_name)),
        row("span_kind", t("rules.spanKind"), input("span_kind", rule?.span_kind, { placeholder: "LLM, RETRIEVER, TOOL…" })),
        row("sample_rate", t("rules.sample"), number("sample_rate", rule?.sample_rate ?? 1), t("rules.sampleHelp")),
        row("max_requests_per_day", t("rules.requests"), number("max_requests_per_day", rule?.max_requests_per_day ?? 1000)),
        row("max_tokens_per_day", t("rules.tokens"), number("max_tokens_per_day", rule?.max_tokens_per_day ?? 2000000)),
        row("delay_seconds", t("rules.delaySeconds"), number("delay_seconds", rule?.delay_seconds ?? 30), t("rules.delayHelp"))),
      row("filters", t("rules.filters"), h("textarea", { id: "rf-filters", name: "filters", rows: 3, spellcheck: "false" }, (rule?.filters || []).map(filterLine).join("\n")),
        t("rules.filtersHelp", { ops: OPS.join(" ") })),
      h("label", { class: "choice" }, enabled, " ", t("rules.enabled")),
      note,
      h("p", { class: "rule-actions" }, h("button", { type: "submit", id: "rf-save" }, rule ? t("rules.saveEdit") : t("rules.create")), " ",
        h("button", { type: "button", class: "secondary", onclick: () => this.open(null) }, t("rules.cancel"))));
    return body;
  }

  /** The request body from the form: empty texts and numbers left out (the API's defaults). */
  body(controls, enabled) {
    const found = { name: controls.name.value.trim(), enabled: enabled.checked };
    found.metrics = controls.metrics.value.split(",").map((m) => m.trim()).filter(Boolean);
    for (const name of TEXTS) if (controls[name].value.trim()) found[name] = controls[name].value.trim();
    for (const name of NUMBERS) if (controls[name].value.trim()) found[name] = Number(controls[name].value);
    found.filters = parseFilters(controls.filters.value);
    return found;
  }

  async save(rule, controls, enabled, errors, note) {
    for (const box of Object.values(errors)) box.replaceChildren();
    note.replaceChildren();
    const body = this.body(controls, enabled);
    const button = document.getElementById("rf-save");
    button.disabled = true;
    try {
      if (rule) await call("PUT", `/online/rules/${encodeURIComponent(rule.name)}`, body);
      else await post("/online/rules", body);
    } catch (error) {
      button.disabled = false;
      if (!(error instanceof ApiError)) throw error;
      const pieces = error.status === 422 ? error.message.split("; ") : [error.message];
      for (const piece of pieces) {
        const field = fieldOf(piece);
        if (field && errors[field]) {
          errors[field].append(h("span", {}, piece));
          controls[field].setAttribute("aria-invalid", "true");
        } else note.append(h("p", {}, piece));
      }
      (controls[pieces.map(fieldOf).find((f) => f && controls[f])] || button).focus();
      return;
    }
    announce(t(rule ? "rules.saved" : "rules.created", { name: body.name }));
    this.params.delete("rule");
    this.go(this.params);
    this.changed();
  }
}
