// The Spaces views: every knowledge space (`#/spaces`), and one space (`#/spaces/<name>`) with
// a retrieval playground (one query, vector / bm25 / hybrid side by side), its documents, and
// its chunks paged on the server with a document filter. Choices live in the URL.
import { get, post, query } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { replaceParams } from "./router.js";
import { alertBox, longText, pageOf, pager, table, when } from "./widgets.js";

const RETRIEVERS = ["vector", "bm25", "hybrid"];
const SPACES_PAGE = 100;
const DOCS_PAGE = 50;
const CHUNKS_PAGE = 20;
const enc = encodeURIComponent;

function emptyBox(big, hint) {
  return h("div", { class: "empty" }, h("p", { class: "big" }, big), hint ? h("p", { class: "muted" }, hint) : null);
}

/** `#/spaces`: name, embedder, documents, chunks, created. */
export class SpacesView {
  constructor(root, params) {
    this.root = root;
    this.params = params;
    this.stopped = false;
  }

  async start() {
    this.body = h("div", { id: "spaces-body", "aria-live": "polite" });
    this.root.replaceChildren(h("section", { class: "view-head" }, h("h1", {}, t("spaces.title"))), this.body);
    await this.load();
  }

  stop() {
    this.stopped = true;
  }

  async load() {
    const offset = (pageOf(this.params) - 1) * SPACES_PAGE;
    let spaces;
    try {
      spaces = await get(`/knowledge/spaces${query({ offset, limit: SPACES_PAGE })}`);
    } catch (error) {
      if (!this.stopped && error.status !== 401) this.body.replaceChildren(alertBox(t("error", { message: error.message })));
      return;
    }
    if (this.stopped) return;
    if (!spaces.length && offset === 0) {
      this.body.replaceChildren(emptyBox(t("spaces.empty"), t("spaces.emptyHint")));
      return;
    }
    const head = ["spaces.name", "spaces.embedder", "spaces.documents", "spaces.chunks", "col.date"].map((k) => t(k));
    const rows = spaces.map((s) => h("tr", { "data-space": s.name },
      h("th", { scope: "row" }, h("a", { href: `#/spaces/${enc(s.name)}` }, s.name)),
      h("td", { class: "mono" }, s.embedder),
      h("td", { class: "num" }, String(s.documents)),
      h("td", { class: "num" }, String(s.chunks)),
      h("td", { class: "nowrap" }, when(s.created_at))));
    const go = (step) => {
      this.params.set("page", String(pageOf(this.params) + step));
      replaceParams("spaces", this.params);
      this.load();
    };
    this.body.replaceChildren(h("div", {}, table("spaces", null, head, rows),
      pager({ offset, shown: spaces.length, size: SPACES_PAGE, total: null, label: t("spaces.pages"), go })));
  }
}

function fact(label, value) {
  return h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, value));
}

function hitItem(hit, rank) {
  return h("li", { class: "hit", "data-rank": rank, "data-chunk": hit.chunk_id },
    h("div", { class: "hit-head" },
      h("span", { class: "badge rank" }, `#${rank}`),
      h("span", { class: "num score", title: t("spaces.score") }, Number(hit.score).toFixed(4)),
      h("span", { class: "muted small doc" }, hit.document)),
    longText(hit.content, 300));
}

/** `#/spaces/<name>`: the space's facts, the playground, its documents and its chunks. */
export class SpaceView {
  constructor(root, id, params) {
    this.root = root;
    this.id = id;
    this.params = params;
    this.stopped = false;
    this.asked = 0;
  }

  get path() {
    return `spaces/${enc(this.id)}`;
  }

  async start() {
    this.root.replaceChildren(h("p", { class: "loading" }, t("loading"))); // not the last view's page
    this.space = await get(`/knowledge/spaces/${enc(this.id)}`);
    if (this.stopped) return;
    this.docs = h("div", { id: "docs-body", "aria-live": "polite" });
    this.chunks = h("div", { id: "chunks-body", "aria-live": "polite" });
    this.root.replaceChildren(this.head(),
      h("section", { "aria-labelledby": "pg-title" }, h("h2", { id: "pg-title" }, t("spaces.playground")), this.playground()),
      h("section", { "aria-labelledby": "docs-title" }, h("h2", { id: "docs-title" }, t("spaces.documents")), this.docs),
      h("section", { "aria-labelledby": "chunks-title" }, h("h2", { id: "chunks-title" }, t("spaces.chunks")),
        this.chunkFilter(), this.chunks));
    const searched = this.params.get("q") ? this.search() : null;
    await Promise.all([this.loadDocs(), this.loadChunks(), searched]);
  }

  stop() {
    this.stopped = true;
  }

  head() {
    const s = this.space;
    const c = s.chunking || {};
    const chunking = c.strategy === "separator" ? c.strategy : `${c.strategy}, ${c.chunk_size} / ${c.chunk_overlap}`;
    return h("div", { id: "space-head" },
      h("p", {}, h("a", { href: "#/spaces" }, t("spaces.back"))),
      h("h1", {}, t("spaces.one", { name: s.name })),
      s.description ? h("p", { class: "muted" }, s.description) : null,
      h("dl", { class: "facts" },
        fact(t("spaces.embedder"), h("span", { class: "mono" }, s.embedder)),
        fact(t("spaces.dimension"), s.dimension === null ? "–" : String(s.dimension)),
        fact(t("spaces.chunking"), chunking),
        fact(t("spaces.documents"), String(s.documents)),
        fact(t("spaces.chunks"), String(s.chunks)),
        fact(t("col.date"), when(s.created_at))));
  }

  change(values, load) {
    for (const [name, value] of Object.entries(values)) {
      if (value) this.params.set(name, value);
      else this.params.delete(name);
    }
    replaceParams(this.path, this.params);
    if (load) load.call(this);
  }

  // -- the playground ---------------------------------------------------------------------

  playground() {
    const p = this.params;
    this.queryBox = h("input", { id: "pg-q", type: "search", name: "q", required: true, maxlength: 10000,
      value: p.get("q") || "", placeholder: t("spaces.queryHint"), class: "wide", "aria-describedby": "pg-note" });
    this.topK = h("input", { id: "pg-k", type: "number", name: "k", min: 1, step: 1, value: p.get("k") || "5", class: "short", required: true });
    this.note = h("p", { id: "pg-note", class: "error", role: "alert" });
    this.columns = h("div", { class: "retrievers", id: "pg-results" });
    const form = h("form", { class: "filters playground", onsubmit: (event) => { event.preventDefault(); this.search(); } },
      h("label", { for: "pg-q" }, t("spaces.query")), this.queryBox,
      h("label", { for: "pg-k" }, "top_k"), this.topK,
      h("button", { type: "submit" }, t("spaces.search")));
    return h("div", {}, form, this.note, this.columns);
  }

  /** What the form asks, or null after saying what is wrong with it. */
  asking() {
    const text = this.queryBox.value.trim();
    const k = Number(this.topK.value);
    this.note.textContent = "";
    if (!text) {
      this.note.textContent = t("spaces.needQuery");
      this.queryBox.focus();
      return null;
    }
    if (!Number.isInteger(k) || k < 1) {
      this.note.textContent = t("spaces.badTopK");
      this.topK.focus();
      return null;
    }
    return { text, k };
  }

  async search() {
    const ask = this.asking();
    if (!ask) return;
    this.change({ q: ask.text, k: String(ask.k) });
    const asked = ++this.asked;
    const columns = RETRIEVERS.map((name) => {
      const body = h("div", { class: "hits-body" }, h("p", { class: "loading" }, t("loading")));
      const column = h("section", { class: "retriever", "data-retriever": name, "aria-label": t("spaces.hitsOf", { name }) },
        h("h3", {}, name, " ", h("span", { class: "muted small" }, t(`spaces.how.${name}`))), body);
      return { name, body, column };
    });
    this.columns.replaceChildren(...columns.map((c) => c.column));
    await Promise.all(columns.map((c) => this.retrieve(c, ask, asked)));
  }

  async retrieve({ name, body }, ask, asked) {
    let hits;
    try {
      hits = await post(`/knowledge/spaces/${enc(this.id)}/retrieve`, { query: ask.text, top_k: ask.k, retriever: name });
    } catch (error) {
      if (asked === this.asked && !this.stopped) body.replaceChildren(alertBox(error.message));
      return;
    }
    if (asked !== this.asked || this.stopped) return; // a newer search owns the columns
    body.replaceChildren(hits.length
      ? h("ol", { class: "hits" }, hits.map((hit, i) => hitItem(hit, i + 1)))
      : h("p", { class: "muted" }, t("spaces.noHits")));
  }

  // -- documents and chunks ---------------------------------------------------------------

  async loadDocs() {
    const offset = (pageOf(this.params, "dpage") - 1) * DOCS_PAGE;
    let docs;
    try {
      docs = await get(`/knowledge/spaces/${enc(this.id)}/documents${query({ offset, limit: DOCS_PAGE })}`);
    } catch (error) {
      if (!this.stopped && error.status !== 401) this.docs.replaceChildren(alertBox(error.message));
      return;
    }
    if (this.stopped) return;
    if (!docs.length && offset === 0) {
      this.docs.replaceChildren(emptyBox(t("spaces.noDocs"), t("spaces.noDocsHint", { name: this.space.name })));
      return;
    }
    this.docNames.replaceChildren(...docs.map((d) => h("option", { value: d.name })));
    const head = ["spaces.docName", "spaces.kind", "spaces.size", "spaces.chunks", "spaces.updated", "col.actions"].map((k) => t(k));
    const rows = docs.map((d) => h("tr", { "data-doc": d.name },
      h("th", { scope: "row", class: "text" }, d.name),
      h("td", {}, d.kind),
      h("td", { class: "num" }, t("spaces.bytes", { n: d.size.toLocaleString() })),
      h("td", { class: "num" }, String(d.chunk_count)),
      h("td", { class: "nowrap" }, when(d.updated_at)),
      h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": t("spaces.showChunksOf", { name: d.name }),
        onclick: () => this.filterDoc(d.name) }, t("spaces.showChunks")))));
    const go = (step) => this.change({ dpage: String(pageOf(this.params, "dpage") + step) }, this.loadDocs);
    this.docs.replaceChildren(h("div", {}, table("docs", null, head, rows),
      pager({ offset, shown: docs.length, size: DOCS_PAGE, total: null, label: t("spaces.docPages"), go })));
  }

  chunkFilter() {
    this.docInput = h("input", { id: "c-doc", type: "search", name: "doc", value: this.params.get("doc") || "",
      maxlength: 1000, placeholder: t("spaces.docHint"), list: "c-doc-names" });
    this.docNames = h("datalist", { id: "c-doc-names" });
    let typing = null;
    this.docInput.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => this.change({ doc: this.docInput.value.trim(), cpage: "" }, this.loadChunks), 300);
    });
    const all = h("button", { type: "button", class: "secondary", onclick: () => this.filterDoc("") }, t("spaces.allDocs"));
    return h("form", { role: "search", class: "filters", onsubmit: (e) => e.preventDefault() },
      h("label", { for: "c-doc" }, t("spaces.document")), this.docInput, this.docNames, all);
  }

  filterDoc(name) {
    this.docInput.value = name;
    this.change({ doc: name, cpage: "" }, this.loadChunks);
    if (name) document.getElementById("chunks-title").scrollIntoView();
  }

  async loadChunks() {
    const offset = (pageOf(this.params, "cpage") - 1) * CHUNKS_PAGE;
    const doc = this.params.get("doc");
    let page;
    try {
      page = await get(`/knowledge/spaces/${enc(this.id)}/chunks${query({ doc_name: doc, offset, limit: CHUNKS_PAGE })}`);
    } catch (error) {
      if (!this.stopped && error.status !== 401) this.chunks.replaceChildren(alertBox(error.message));
      return;
    }
    if (this.stopped || doc !== this.params.get("doc")) return;
    if (!page.items.length) {
      this.chunks.replaceChildren(emptyBox(t("spaces.noChunks")));
      return;
    }
    const head = ["#", t("spaces.document"), t("spaces.position"), t("spaces.text")];
    const rows = page.items.map((c) => h("tr", { "data-chunk": c.id },
      h("th", { scope: "row", class: "num" }, String(c.id)),
      h("td", { class: "text" }, c.document),
      h("td", { class: "num" }, String(c.position)),
      h("td", { class: "text chunk" }, longText(c.content))));
    const caption = page.total === 1 ? t("spaces.chunkCount1") : t("spaces.chunkCount", { n: page.total });
    const go = (step) => this.change({ cpage: String(pageOf(this.params, "cpage") + step) }, this.loadChunks);
    this.chunks.replaceChildren(h("div", {}, table("chunks", caption, head, rows),
      pager({ offset, shown: page.items.length, size: CHUNKS_PAGE, total: page.total, label: t("spaces.chunkPages"), go })));
  }
}
