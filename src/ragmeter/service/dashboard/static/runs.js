// The Runs view: every run with its name, tags, target and dataset version, its metrics (mean
// and 95% CI), live state, cost and date; search, tag and archived filters kept in the URL;
// cancel and resume; rename, tag, archive and delete.
import { ApiError, del, get, patch, post, query } from "./api.js";
import { intervalBar, progressBar } from "./chart.js";
import { announce, h } from "./dom.js";
import { lang, t } from "./i18n.js";
import { datasetText, labelFields, openDialog, parseTags, relabel, tagChips } from "./labels.js";
import { replaceParams } from "./router.js";
import { notInformative, scaled } from "./stats_text.js";

const STATES = ["pending", "running", "done", "failed", "cancelled"];
const LIVE = new Set(["pending", "running"]);
const PAGE = 50;
const POLL_MS = 1500;

function fmt(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

function when(text) {
  if (!text) return "";
  const stamp = /[zZ]|[+-]\d\d:\d\d$/.test(text) ? text : `${text}Z`; // stored as UTC
  return new Date(stamp).toLocaleString(lang() === "zh" ? "zh-CN" : "en-GB");
}

function metricCell(run) {
  const list = h("ul", { class: "metrics" });
  for (const name of run.metrics) {
    const s = (run.summary || {})[name] || {};
    const flagged = notInformative(s.ci_note, s.count);
    const interval = s.mean === null || s.mean === undefined
      ? h("span", { class: "muted" }, t("metric.noScore"))
      : flagged
        ? h("span", { class: "num" }, `${fmt(s.mean)} `, flagged)
        : h("span", { class: "num" }, `${fmt(s.mean)} [${fmt(s.ci95_low)}, ${fmt(s.ci95_high)}]`);
    list.append(h("li", { "data-metric": name },
      h("span", { class: "metric-name" }, scaled(name, s.scale)),
      intervalBar({ mean: s.mean, low: s.ci95_low, high: s.ci95_high }),
      interval,
      s.null ? h("span", { class: "nulls" }, t("metric.null", { n: s.null })) : null));
  }
  return list;
}

function stateCell(run) {
  const { done = 0, total = 0 } = run.progress || {};
  return h("div", { class: "state-cell" },
    h("span", { class: `badge state-${run.state}` }, t(`state.${run.state}`)),
    progressBar(done, total),
    h("span", { class: "muted small" }, t("progress", { done, total })),
    run.error ? h("span", { class: "error small", title: run.error }, run.error) : null);
}

function costCell(cost) {
  const requests = cost.requests || 0;
  const tokens = (cost.prompt_tokens || 0) + (cost.completion_tokens || 0);
  if (!requests && !tokens) return h("span", { class: "muted" }, t("cost.none"));
  return h("span", {}, t("cost.line", { requests, tokens }));
}

export class RunsView {
  constructor(root, params) {
    this.root = root;
    this.params = params;
    this.timer = null;
    this.stopped = false;
    this.datasets = new Map();
    this.picked = [];
  }

  async start() {
    this.root.replaceChildren(this.filters(), h("div", { id: "runs-body", "aria-live": "polite" }));
    try {
      const page = await get(`/datasets${query({ limit: 1000 })}`);
      for (const d of page.items) this.datasets.set(d.id, d);
      await this.fillDatasets();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
    }
    await this.load();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  filters() {
    const p = this.params;
    const search = h("input", { id: "f-q", type: "search", name: "q", value: p.get("q") || "", placeholder: t("runs.searchHint"), maxlength: 200 });
    const state = h("select", { id: "f-state", name: "state" },
      h("option", { value: "" }, t("runs.any")),
      STATES.map((s) => h("option", { value: s, selected: p.get("state") === s }, t(`state.${s}`))));
    this.datasetSelect = h("select", { id: "f-dataset", name: "dataset" }, h("option", { value: "" }, t("runs.any")));
    this.tagInput = h("input", { id: "f-tag", type: "search", name: "tag", value: p.getAll("tag").join(" "), placeholder: t("runs.tagHint"), class: "tags-filter" });
    const archived = h("select", { id: "f-archived", name: "archived" },
      ["no", "all", "yes"].map((v) => h("option", { value: v, selected: (p.get("archived") || "no") === v }, t(`runs.archived.${v}`))));
    let typing = null;
    search.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => this.change({ q: search.value.trim() }), 250);
    });
    state.addEventListener("change", () => this.change({ state: state.value }));
    let tagging = null;
    this.tagInput.addEventListener("input", () => {
      clearTimeout(tagging);
      tagging = setTimeout(() => this.change({ tag: parseTags(this.tagInput.value) }), 250);
    });
    archived.addEventListener("change", () => this.change({ archived: archived.value === "no" ? "" : archived.value }));
    this.datasetSelect.addEventListener("change", () => this.change({ dataset: this.datasetSelect.value }));
    const clear = h("button", { type: "button", class: "secondary", onclick: () => {
      search.value = ""; state.value = ""; this.datasetSelect.value = ""; this.tagInput.value = ""; archived.value = "no";
      this.change({ q: "", state: "", dataset: "", tag: [], archived: "" });
    } }, t("runs.clear"));
    this.compareButton = h("button", { type: "button", class: "secondary", disabled: true, onclick: () => {
      location.hash = `#/compare/${this.picked.map(encodeURIComponent).join("/")}`;
    } }, t("cmp.compareTwo", { n: 0 }));
    return h("section", { class: "view-head" },
      h("div", { class: "title-row" }, h("h1", {}, t("runs.title")),
        h("a", { href: "#/newrun", class: "button", id: "new-run" }, t("newrun.open"))),
      h("p", { class: "compare-pick" }, this.compareButton, h("span", { class: "muted small" }, t("cmp.compareHint"))),
      h("form", { role: "search", class: "filters", onsubmit: (e) => e.preventDefault() },
        h("label", { for: "f-q" }, t("runs.search")), search,
        h("label", { for: "f-state" }, t("runs.state")), state,
        h("label", { for: "f-dataset" }, t("runs.dataset")), this.datasetSelect,
        h("label", { for: "f-tag" }, t("runs.tags")), this.tagInput,
        h("label", { for: "f-archived" }, t("runs.archived")), archived,
        clear));
  }

  async fillDatasets() {
    const chosen = this.params.get("dataset") || "";
    if (chosen && !this.datasets.has(Number(chosen))) {
      // an older version (a link from a dataset's page): named, not left out of the list
      try {
        this.datasets.set(Number(chosen), await get(`/datasets/${encodeURIComponent(chosen)}`));
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
      }
    }
    for (const [id, d] of this.datasets) {
      if (d.name) this.datasetSelect.append(h("option", { value: id, selected: String(id) === chosen }, datasetText(d)));
    }
  }

  change(values) {
    for (const [name, value] of Object.entries(values)) {
      this.params.delete(name);
      for (const one of Array.isArray(value) ? value : [value]) if (one) this.params.append(name, one);
    }
    this.params.delete("page");
    replaceParams("runs", this.params);
    this.load();
  }

  async load() {
    clearTimeout(this.timer);
    const p = this.params;
    const pageNo = Math.max(Number(p.get("page") || 1), 1);
    const ask = { offset: (pageNo - 1) * PAGE, limit: PAGE, summary: true, q: p.get("q"), state: p.get("state"),
      dataset_id: p.get("dataset"), tag: p.getAll("tag"), archived: p.get("archived") };
    const body = document.getElementById("runs-body");
    // filters changed quickly send several requests: only the latest one's answer is shown
    const ticket = (this.ticket = (this.ticket || 0) + 1);
    let page;
    try {
      page = await get(`/evaluate/runs${query(ask)}`);
    } catch (error) {
      if (this.stopped || ticket !== this.ticket || error.status === 401) return;
      body.replaceChildren(h("p", { class: "error", role: "alert" }, t("error", { message: error.message })));
      return;
    }
    if (this.stopped || ticket !== this.ticket) return;
    body.replaceChildren(this.render(page, pageNo));
    if (page.items.some((run) => LIVE.has(run.state))) this.timer = setTimeout(() => this.load(), POLL_MS);
  }

  render(page, pageNo) {
    const filtered = ["q", "state", "dataset", "tag", "archived"].some((name) => this.params.get(name));
    if (!page.items.length) {
      return filtered
        ? h("div", { class: "empty" }, h("p", {}, t("runs.noMatch")))
        : h("div", { class: "empty" }, h("p", { class: "big" }, t("runs.empty")), h("p", { class: "muted" }, t("runs.emptyHint")));
    }
    const head = ["col.run", "col.tags", "col.target", "col.dataset", "col.metrics", "col.state", "col.cost", "col.date", "col.actions"];
    const table = h("table", { class: "runs" },
      h("caption", {}, page.total === 1 ? t("runs.count1") : t("runs.count", { n: page.total })),
      h("thead", {}, h("tr", {}, head.map((key) => h("th", { scope: "col" }, t(key))))),
      h("tbody", {}, page.items.map((run) => this.row(run))));
    return h("div", {}, h("div", { class: "table-wrap" }, table), this.pager(page, pageNo));
  }

  row(run) {
    const href = `#/runs/${encodeURIComponent(run.run_id)}`;
    return h("tr", { "data-run": run.run_id, "data-state": run.state, class: run.archived ? "archived" : null },
      h("th", { scope: "row", class: "run-name", title: run.run_id },
        run.name ? h("a", { href, class: "name" }, run.name) : h("a", { href, class: "name unnamed" }, run.label || run.run_id.slice(0, 12)),
        h("span", { class: "mono small muted run-id" }, run.run_id.slice(0, 12)),
        run.archived ? h("span", { class: "badge archived" }, t("runs.archivedBadge")) : null,
        run.scripted_judge ? h("span", { class: "badge scripted", title: t("scripted.note") }, t("scripted.badge")) : null),
      h("td", { class: "tags" }, tagChips(run.tags, (tag) => this.addTag(tag))),
      h("td", { class: "label" }, run.label || h("span", { class: "muted" }, "–")),
      h("td", { class: "nowrap dataset" }, run.dataset && run.dataset.name
        ? h("span", { title: run.dataset.hash ? `#${run.dataset.hash}` : null }, datasetText(run.dataset))
        : h("span", { class: "muted" }, datasetText(run.dataset))),
      h("td", {}, metricCell(run)),
      h("td", {}, stateCell(run)),
      h("td", {}, costCell(run.cost || {})),
      h("td", { class: "created" }, when(run.created_at)),
      h("td", {}, this.actions(run)));
  }

  pick(runId, checked) {
    this.picked = this.picked.filter((id) => id !== runId);
    if (checked) this.picked.push(runId);
    for (const box of this.root.querySelectorAll("input.pick-run")) {
      box.disabled = this.picked.length >= 2 && !this.picked.includes(box.value);
    }
    this.compareButton.textContent = t("cmp.compareTwo", { n: this.picked.length });
    this.compareButton.disabled = this.picked.length !== 2;
  }

  actions(run) {
    const short = run.run_id.slice(0, 12);
    const id = `pick-${run.run_id}`;
    const chosen = this.picked.includes(run.run_id);
    const box = h("div", { class: "actions" }, h("span", { class: "pick" },
      h("input", { type: "checkbox", class: "pick-run", id, value: run.run_id, checked: chosen,
        disabled: this.picked.length >= 2 && !chosen, "aria-label": t("cmp.pickLabel", { id: short }),
        onchange: (e) => this.pick(run.run_id, e.currentTarget.checked) }),
      h("label", { for: id }, t("cmp.pick"))));
    if (LIVE.has(run.state)) {
      box.append(h("button", { type: "button", class: "danger", "aria-label": t("action.cancelLabel", { id: short }),
        onclick: (e) => this.act(e.currentTarget, run.run_id, "cancel", "action.cancelled") }, t("action.cancel")));
    } else if (run.resumable && (run.state === "failed" || run.state === "cancelled")) {
      box.append(h("button", { type: "button", "aria-label": t("action.resumeLabel", { id: short }),
        onclick: (e) => this.act(e.currentTarget, run.run_id, "resume", "action.resumed") }, t("action.resume")));
    }
    box.append(this.manage(run));
    return box;
  }

  /** Rename, tag, archive and delete, behind one "Manage" disclosure per run. */
  manage(run) {
    const title = run.name || run.label || run.run_id.slice(0, 12);
    const path = `/evaluate/runs/${encodeURIComponent(run.run_id)}`;
    const after = (key) => () => { announce(t(key, { name: title })); this.load(); };
    const item = (key, onclick, cls) => h("button", { type: "button", class: cls || "secondary small-button",
      onclick: (e) => { menu.open = false; return onclick(e); } }, t(key));
    const menu = h("details", { class: "manage" });
    menu.append(
      h("summary", { "aria-label": t("manage.label", { name: title }) }, t("manage.open")),
      h("div", { class: "manage-items" },
        item("manage.rename", () => openDialog({ title: t("manage.renameTitle", { name: title }), fields: labelFields(run, ["name"]),
          action: t("dialog.save"), submit: (v) => relabel(run.run_id, run, v), done: after("manage.saved") })),
        item("manage.tags", () => openDialog({ title: t("manage.tagsTitle", { name: title }), fields: labelFields(run, ["tags"]),
          action: t("dialog.save"), submit: (v) => relabel(run.run_id, run, v), done: after("manage.saved") })),
        item(run.archived ? "manage.unarchive" : "manage.archive", async (e) => {
          const button = e.currentTarget;
          button.disabled = true;
          try {
            await patch(path, { archived: !run.archived });
            after(run.archived ? "manage.unarchived" : "manage.archived")();
          } catch (error) {
            if (!(error instanceof ApiError)) throw error;
            announce(t("error", { message: error.message }));
            button.disabled = false;
          }
        }),
        item("manage.delete", () => openDialog({ title: t("manage.deleteTitle", { name: title }),
          message: t("manage.deleteText", { n: run.progress ? run.progress.done : 0 }), action: t("manage.delete"), danger: true,
          submit: () => del(path), done: after("manage.deleted") }), "danger small-button")));
    return menu;
  }

  /** Add `tag` to the tag filter (a chip clicked in the table). */
  addTag(tag) {
    const tags = parseTags(this.tagInput.value);
    if (!tags.includes(tag)) tags.push(tag);
    this.tagInput.value = tags.join(" ");
    this.change({ tag: tags });
  }

  async act(button, runId, verb, done) {
    button.disabled = true;
    try {
      await post(`/evaluate/runs/${encodeURIComponent(runId)}/${verb}`);
      announce(t(done, { id: runId.slice(0, 12) }));
    } catch (error) {
      announce(t("error", { message: error.message }));
    }
    await this.load();
  }

  pager(page, pageNo) {
    const pages = Math.max(Math.ceil(page.total / PAGE), 1);
    if (pages === 1) return null;
    const go = (n) => { this.params.set("page", String(n)); replaceParams("runs", this.params); this.load(); };
    const from = page.offset + 1;
    const to = page.offset + page.items.length;
    return h("nav", { class: "pager", "aria-label": t("runs.page", { from, to, total: page.total }) },
      h("button", { type: "button", class: "secondary", disabled: pageNo <= 1, onclick: () => go(pageNo - 1) }, t("runs.prev")),
      h("span", {}, t("runs.page", { from, to, total: page.total })),
      h("button", { type: "button", class: "secondary", disabled: pageNo >= pages, onclick: () => go(pageNo + 1) }, t("runs.next")));
  }
}
