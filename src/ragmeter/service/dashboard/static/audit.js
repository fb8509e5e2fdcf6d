// The Audit view (`#/audit`, admins only): every change made through the service, newest
// first, a page of 50 at a time; "Older" pages on from the last entry shown (`?before=<id>`).
import { get, query } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { replaceParams } from "./router.js";
import { table, when } from "./widgets.js";

const PAGE = 50;

function ids(value) {
  if (value === null || value === undefined) return "–";
  return Object.entries(value).map(([key, one]) => `${key}=${typeof one === "object" ? JSON.stringify(one) : one}`).join(", ");
}

export class AuditView {
  constructor(root, params) {
    this.root = root;
    this.before = Number(params.get("before")) || null;
    this.stopped = false;
  }

  async start() {
    this.body = h("div", { id: "audit-body", "aria-live": "polite" });
    this.root.replaceChildren(h("section", { class: "view-head" }, h("h1", {}, t("audit.title"))),
      h("p", { class: "muted" }, t("audit.intro")), this.body);
    await this.load();
  }

  stop() {
    this.stopped = true;
  }

  async load() {
    const entries = await get(`/audit${query({ limit: PAGE, before_id: this.before })}`);
    if (this.stopped) return;
    replaceParams("audit", new URLSearchParams(this.before ? { before: String(this.before) } : {}));
    const rows = entries.map((e) => h("tr", {},
      h("td", {}, when(e.at)), h("td", {}, e.user), h("td", {}, e.action),
      h("td", {}, `${e.object_kind}${e.object_id ? ` ${e.object_id}` : ""}`),
      h("td", {}, ids(e.before)), h("td", {}, ids(e.after))));
    const head = ["audit.at", "audit.user", "audit.action", "audit.object", "audit.before", "audit.after"].map((k) => t(k));
    const go = (older) => {
      this.before = older ? entries[entries.length - 1].id : null;
      this.load().catch(() => {});
    };
    const nav = h("nav", { class: "pager", "aria-label": t("audit.pages") },
      h("button", { type: "button", class: "secondary", disabled: !this.before, onclick: () => go(false) }, t("audit.newest")),
      h("button", { type: "button", class: "secondary", disabled: entries.length < PAGE, onclick: () => go(true) }, t("audit.older")));
    this.body.replaceChildren(entries.length ? table("audit", t("audit.caption", { n: entries.length }), head, rows)
      : h("p", { class: "empty" }, t("audit.none")), nav);
  }
}
