// The Datasets views: every stored dataset (its newest version, how many versions and runs)
// with an upload form (`#/datasets`), and one dataset's versions, each with its runs, and
// rows paged on the server (`#/datasets/<name>` or `<name>@<version>`). A refused upload
// shows the server's message as it is: it names the row and the field at fault.
import { del, get, query, upload } from "./api.js";
import { announce, h } from "./dom.js";
import { t } from "./i18n.js";
import { openDialog } from "./labels.js";
import { replaceParams } from "./router.js";
import { alertBox, longText, pageOf, pager, table, when } from "./widgets.js";

/** the file kinds POST /datasets takes */
const SUFFIXES = [".jsonl", ".ndjson", ".csv", ".json"];
const LIST_PAGE = 50;
const ROWS_PAGE = 50;
const enc = encodeURIComponent;

function evaluateLink(name) {
  return h("a", { href: `#/newrun?${new URLSearchParams({ dataset: name })}`, class: "button secondary",
    "aria-label": t("datasets.evaluateLabel", { name }) }, t("datasets.evaluate"));
}

/** `#/datasets`: the upload form, then name, rows, source and date of each dataset. */
export class DatasetsView {
  constructor(root, params) {
    this.root = root;
    this.params = params;
    this.stopped = false;
  }

  async start() {
    this.body = h("div", { id: "datasets-body", "aria-live": "polite" });
    this.root.replaceChildren(h("section", { class: "view-head" }, h("h1", {}, t("datasets.title"))),
      this.uploadForm(), h("h2", {}, t("datasets.list")), this.body);
    await this.load();
  }

  stop() {
    this.stopped = true;
  }

  uploadForm() {
    const file = h("input", { id: "ds-file", type: "file", name: "file", accept: SUFFIXES.join(","), required: true, "aria-describedby": "ds-help" });
    const name = h("input", { id: "ds-name", type: "text", name: "name", maxlength: 200, placeholder: t("datasets.nameHint") });
    const outcome = h("div", { id: "ds-outcome" });
    const button = h("button", { type: "submit" }, t("datasets.upload"));
    const send = async (event) => {
      event.preventDefault();
      outcome.replaceChildren();
      const chosen = file.files[0];
      if (!chosen) {
        outcome.append(alertBox(t("datasets.needFile")));
        file.focus();
        return;
      }
      if (!SUFFIXES.some((s) => chosen.name.toLowerCase().endsWith(s))) {
        outcome.append(alertBox(t("datasets.badKind", { name: chosen.name, kinds: SUFFIXES.join(", ") })));
        file.focus();
        return;
      }
      const form = new FormData();
      form.append("file", chosen, chosen.name);
      if (name.value.trim()) form.append("name", name.value.trim());
      button.disabled = true;
      try {
        const stored = await upload("/datasets", form);
        const tag = `${stored.name}@${stored.version}`;
        const key = stored.reused ? "datasets.reused" : stored.row_count === 1 ? "datasets.done1" : "datasets.done";
        const text = t(key, { name: tag, n: stored.row_count });
        outcome.append(h("p", { class: "ok", role: "status" }, text, " ",
          h("a", { href: `#/datasets/${enc(tag)}` }, t("datasets.see"))));
        announce(text);
        file.value = "";
        name.value = "";
        await this.load();
      } catch (error) {
        outcome.append(alertBox(error.message, "ds-error"));
      } finally {
        button.disabled = false;
      }
    };
    return h("section", { class: "card", "aria-labelledby": "ds-up" },
      h("h2", { id: "ds-up" }, t("datasets.uploadTitle")),
      h("p", { class: "muted small", id: "ds-help" }, t("datasets.help")),
      h("form", { class: "filters", onsubmit: send },
        h("label", { for: "ds-file" }, t("datasets.file")), file,
        h("label", { for: "ds-name" }, t("datasets.name")), name,
        button),
      outcome);
  }

  async load() {
    const offset = (pageOf(this.params) - 1) * LIST_PAGE;
    let page;
    try {
      page = await get(`/datasets${query({ offset, limit: LIST_PAGE })}`);
    } catch (error) {
      if (!this.stopped && error.status !== 401) this.body.replaceChildren(alertBox(t("error", { message: error.message })));
      return;
    }
    if (this.stopped) return;
    if (!page.items.length) {
      this.body.replaceChildren(h("div", { class: "empty" }, h("p", { class: "big" }, t("datasets.empty")),
        h("p", { class: "muted" }, t("datasets.emptyHint"))));
      return;
    }
    const head = ["datasets.name", "datasets.newest", "datasets.versions", "datasets.runs", "datasets.rows", "datasets.source", "col.date", "col.actions"].map((k) => t(k));
    const rows = page.items.map((d) => h("tr", { "data-dataset": d.name },
      h("th", { scope: "row" }, h("a", { href: `#/datasets/${enc(d.name)}` }, d.name)),
      h("td", { class: "num", "data-col": "version" }, `v${d.version}`),
      h("td", { class: "num", "data-col": "versions" }, String(d.versions ?? 1)),
      h("td", { class: "num", "data-col": "runs" }, String(d.runs ?? 0)),
      h("td", { class: "num", "data-col": "rows" }, String(d.row_count)),
      h("td", { class: "text" }, d.source),
      h("td", { class: "nowrap" }, when(d.created_at)),
      h("td", {}, evaluateLink(d.name))));
    const caption = page.total === 1 ? t("datasets.count1") : t("datasets.count", { n: page.total });
    const go = (step) => {
      this.params.set("page", String(pageOf(this.params) + step));
      replaceParams("datasets", this.params);
      this.load();
    };
    this.body.replaceChildren(h("div", {}, table("datasets", caption, head, rows),
      pager({ offset, shown: page.items.length, size: LIST_PAGE, total: page.total, label: t("datasets.pages"), go })));
  }
}

function cell(value) {
  if (value === undefined) return h("td", { class: "muted" }, "");
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return h("td", { class: "text" }, longText(text, 240));
}

/** `#/datasets/<name>`: its facts and its rows, every field a column. */
export class DatasetView {
  constructor(root, id, params) {
    this.root = root;
    this.id = id;
    this.params = params;
    this.stopped = false;
  }

  async start() {
    this.root.replaceChildren(h("p", { class: "loading" }, t("loading"))); // not the last view's page
    const [d, versions] = await Promise.all([get(`/datasets/${enc(this.id)}`), get(`/datasets/${enc(this.id)}/versions`)]);
    if (this.stopped) return;
    this.dataset = d;
    this.body = h("div", { id: "rows-body", "aria-live": "polite" });
    const fact = (label, value) => h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, value));
    this.root.replaceChildren(
      h("p", {}, h("a", { href: "#/datasets" }, t("datasets.back"))),
      h("div", { class: "title-row" }, h("h1", {}, t("datasets.one", { name: d.name })),
        h("button", { type: "button", class: "danger", id: "delete-dataset", onclick: () => this.remove(d.name, versions.length) },
          t("datasets.deleteAll"))),
      h("dl", { class: "facts" },
        fact(t("datasets.version"), h("span", { id: "shown-version" }, t(d.version === versions[0].version ? "datasets.newestOf" : "datasets.olderOf",
          { v: d.version, n: versions.length }))),
        fact(t("datasets.rows"), String(d.row_count)),
        fact(t("datasets.hash"), h("span", { class: "mono", title: d.content_hash || "" }, (d.content_hash || "–").slice(0, 12))),
        fact(t("datasets.source"), d.source),
        fact(t("col.date"), when(d.created_at)),
        fact(t("col.actions"), evaluateLink(d.name))),
      h("h2", {}, t("datasets.versionsTitle")), this.versionTable(d, versions),
      h("h2", {}, t("datasets.rowsOf", { name: `${d.name}@${d.version}` })), this.body);
    await this.load();
  }

  /** Every version: rows, hash, source, date, and its runs (a link to them in the Runs view). */
  versionTable(shown, versions) {
    const head = ["datasets.version", "datasets.rows", "datasets.hash", "datasets.source", "col.date", "datasets.runs", "col.actions"].map((k) => t(k));
    const rows = versions.map((v) => {
      const tag = `${v.name}@${v.version}`;
      return h("tr", { "data-version": v.version, class: v.id === shown.id ? "current" : null },
        h("th", { scope: "row" }, v.id === shown.id ? h("strong", { "aria-current": "true" }, `v${v.version}`)
          : h("a", { href: `#/datasets/${enc(tag)}`, "aria-label": t("datasets.openVersion", { name: tag }) }, `v${v.version}`)),
        h("td", { class: "num" }, String(v.row_count)),
        h("td", { class: "mono", title: v.content_hash || "" }, (v.content_hash || "–").slice(0, 12)),
        h("td", { class: "text" }, v.source),
        h("td", { class: "nowrap" }, when(v.created_at)),
        h("td", { class: "num" }, v.runs ? h("a", { href: `#/runs?dataset=${v.id}`, "aria-label": t("datasets.runsOf", { name: tag, n: v.runs }) }, String(v.runs))
          : h("span", { class: "muted" }, "0")),
        h("td", {}, h("button", { type: "button", class: "danger small-button", "aria-label": t("datasets.deleteVersionLabel", { name: tag }),
          onclick: () => this.remove(tag, 1) }, t("manage.delete"))));
    });
    const caption = versions.length === 1 ? t("datasets.versionCount1") : t("datasets.versionCount", { n: versions.length });
    return table("versions", caption, head, rows);
  }

  /** Delete `what` (a name: every version; `name@v`: one) once the user confirms. */
  remove(what, count) {
    const all = !what.includes("@");
    openDialog({
      title: t(all ? "datasets.deleteAllTitle" : "datasets.deleteVersionTitle", { name: what, n: count }),
      message: t("datasets.deleteText"), action: t("manage.delete"), danger: true,
      submit: () => del(`/datasets/${enc(what)}`),
      done: () => {
        announce(t("datasets.deleted", { name: what }));
        if (all || what === `${this.dataset.name}@${this.dataset.version}`) location.hash = "#/datasets";
        else this.start();
      },
    });
  }

  stop() {
    this.stopped = true;
  }

  async load() {
    const offset = (pageOf(this.params) - 1) * ROWS_PAGE;
    let page;
    try {
      page = await get(`/datasets/${enc(this.id)}/rows${query({ offset, limit: ROWS_PAGE })}`);
    } catch (error) {
      if (!this.stopped && error.status !== 401) this.body.replaceChildren(alertBox(t("error", { message: error.message })));
      return;
    }
    if (this.stopped) return;
    if (!page.items.length) {
      this.body.replaceChildren(h("div", { class: "empty" }, h("p", {}, t("datasets.noRows"))));
      return;
    }
    const fields = [...new Set(page.items.flatMap((row) => Object.keys(row)))];
    const rows = page.items.map((row, i) => h("tr", { "data-row": offset + i },
      h("th", { scope: "row", class: "num" }, String(offset + i)),
      fields.map((f) => cell(row[f]))));
    const caption = page.total === 1 ? t("run.rowCount1") : t("run.rowCount", { n: page.total });
    const go = (step) => {
      this.params.set("page", String(pageOf(this.params) + step));
      replaceParams(`datasets/${enc(this.id)}`, this.params);
      this.load();
    };
    this.body.replaceChildren(h("div", {}, table("dataset-rows", caption, ["#", ...fields], rows),
      pager({ offset, shown: page.items.length, size: ROWS_PAGE, total: page.total, label: t("run.pages"), go })));
  }
}
