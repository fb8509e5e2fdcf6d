// What made a run (its lineage), as the Run view shows it, and what differs between two
// runs' lineages and rows, as the Compare view shows it before the numbers.
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { datasetText } from "./labels.js";

/** the lineage's parts, in the order they are shown and named in a change's key */
const PARTS = ["label", "dataset", "target", "metrics", "options", "judge", "embedder", "ragmeter", "code"];

function entry(key, ...value) {
  return h("div", { class: "fact", "data-fact": key }, h("dt", {}, t(`lineage.${key}`)), h("dd", {}, ...value));
}

/** `{a: 1, b: null}` as "a 1 · b null", leaving out what is missing. */
function pairs(object) {
  return Object.entries(object || {})
    .filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => `${k} ${typeof v === "object" ? JSON.stringify(v) : v}`)
    .join(" · ");
}

function datasetFact(d) {
  if (!d) return null;
  return entry("dataset", h("span", { class: "strong" }, datasetText(d)),
    d.hash ? h("span", { class: "mono small", title: t("lineage.hash") }, `#${d.hash}`) : null,
    d.source ? h("span", { class: "muted small" }, d.source) : null,
    d.rows !== undefined ? h("span", { class: "muted small" }, t("run.rowCount", { n: d.rows })) : null);
}

function targetFact(label, target) {
  const tg = target || {};
  const details = [];
  if (tg.retriever) details.push(pairs({ retriever: tg.retriever, top_k: tg.top_k, score_threshold: tg.score_threshold }));
  if (tg.space) {
    const s = tg.space;
    const chunking = s.chunking ? `${s.chunking.strategy || ""} ${s.chunking.chunk_size}/${s.chunking.chunk_overlap}`.trim() : null;
    details.push(pairs({ space: s.name, embedder: s.embedder, chunking, revision: s.revision }));
  }
  if (tg.app) {
    const app = tg.app.version ? `${tg.app.name}@${tg.app.version}` : tg.app.name;
    details.push(pairs({ app, kind: tg.app.kind, settings: tg.app.settings }));
  }
  return entry("target", h("span", { class: "strong" }, label || tg.kind || "–"),
    ...details.map((text) => h("span", { class: "muted small" }, text)));
}

/** A stored prompt or app as NAME@V (the version a run used); "–" for none. */
function versioned(name, version) {
  if (!name) return "–";
  return version ? `${name}@${version}` : name;
}

function judgeFact(judge) {
  if (!judge) return entry("judge", h("span", { class: "muted" }, t("lineage.noJudge")));
  const prompt = judge.prompt || {};
  return entry("judge", h("span", { class: "strong" }, judge.model),
    judge.base_url ? h("span", { class: "muted small" }, judge.base_url) : null,
    h("span", { class: "small" }, t("lineage.prompt", { code: versioned(prompt.code, prompt.version) })),
    prompt.hash ? h("span", { class: "mono small" }, `#${prompt.hash}`) : null);
}

function codeFact(code) {
  if (!code) return entry("code", h("span", { class: "muted" }, t("lineage.noCode")));
  return entry("code", h("span", { class: "mono", title: code.commit }, String(code.commit).slice(0, 12)),
    code.dirty ? h("span", { class: "badge dirty" }, t("lineage.dirty")) : null,
    code.dirty === false ? h("span", { class: "muted small" }, t("lineage.clean")) : null);
}

/** The "what made it" panel of a run: a compact definition list, or "not recorded". */
export function lineagePanel(run) {
  const l = run.lineage || {};
  const box = h("section", { class: "card lineage", id: "run-lineage", "aria-labelledby": "lineage-title" },
    h("h2", { id: "lineage-title" }, t("lineage.title")));
  if (!Object.keys(l).length) {
    box.append(h("p", { class: "muted", id: "lineage-none" }, t("lineage.notRecorded")),
      h("dl", { class: "lineage-facts" }, datasetFact(run.dataset), entry("target", run.label || "–")));
    return box;
  }
  box.append(h("dl", { class: "lineage-facts" },
    datasetFact(l.dataset),
    targetFact(l.label, l.target),
    entry("metrics", (l.metrics || []).join(", ") || "–"),
    entry("options", h("span", { class: "small" }, pairs(l.options) || "–")),
    judgeFact(l.judge),
    entry("embedder", l.embedder || h("span", { class: "muted" }, t("lineage.none"))),
    entry("ragmeter", l.ragmeter || "–"),
    codeFact(l.code)));
  return box;
}

/** A lineage key (`target.space.revision`) in words (its own, else its part's then the rest),
 *  with the key itself beside it, as `ragmeter runs compare` prints it. */
function keyText(key) {
  const own = t(`changes.key.${key}`);
  let name = own;
  if (own === `changes.key.${key}`) {
    const [part, ...rest] = key.split(".");
    name = PARTS.includes(part) ? t(`lineage.${part}`) : part;
    if (rest.length) name = `${name} · ${rest.join(".")}`;
  }
  return [name, " ", h("span", { class: "mono small muted" }, key)];
}

function valueText(value) {
  if (value === null || value === undefined || value === "") return h("span", { class: "muted" }, t("lineage.none"));
  if (typeof value === "boolean") return t(value ? "lineage.yes" : "lineage.no");
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** "12 rows added, 3 removed, 5 changed, paired by id" (null: the same dataset version). */
export function rowsDiffText(rows) {
  if (!rows) return null;
  return t("changes.rows", { added: rows.added, removed: rows.removed, changed: rows.changed,
    unchanged: rows.unchanged, by: t(rows.paired_by === "id" ? "changes.byId" : "changes.byQuery") });
}

/** The "what changed" section of Compare: lineage facts that differ, and the rows' diff. */
export function changesSection(found) {
  const box = h("section", { class: "card changes", id: "compare-changes", "aria-labelledby": "changes-title" },
    h("h2", { id: "changes-title" }, t("changes.title")));
  if (!found.changes.length && !found.rows) {
    box.append(h("p", { class: "ok", id: "same-lineage" }, t("changes.same")));
    return box;
  }
  if (found.changes.length) {
    box.append(h("div", { class: "table-wrap" }, h("table", { class: "runs changes-table" },
      h("thead", {}, h("tr", {}, ["changes.fact", "cmp.baseline", "cmp.candidate"].map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, found.changes.map((c) => h("tr", { "data-key": c.key },
        h("th", { scope: "row" }, keyText(c.key)),
        h("td", { class: "text" }, valueText(c.a)),
        h("td", { class: "text" }, valueText(c.b))))))));
  } else {
    box.append(h("p", { class: "muted" }, t("changes.sameFacts")));
  }
  if (found.rows) box.append(h("p", { class: "rows-diff", id: "rows-diff" }, rowsDiffText(found.rows)));
  return box;
}
