// Small pieces the Spaces, Datasets and New run views share: dates, pagers, alerts, cut text.
import { h } from "./dom.js";
import { lang, t } from "./i18n.js";

/** A stored UTC time as a local date and time ("–" when missing). */
export function when(text) {
  if (!text) return "–";
  const stamp = /[zZ]|[+-]\d\d:\d\d$/.test(text) ? text : `${text}Z`;
  return new Date(stamp).toLocaleString(lang() === "zh" ? "zh-CN" : "en-GB");
}

/** The page number in `params[name]` (1 when missing or not a number). */
export function pageOf(params, name = "page") {
  const n = Math.floor(Number(params.get(name) || 1));
  return Number.isFinite(n) && n > 1 ? n : 1;
}

/** Previous / next buttons for a page of `shown` items from `offset`, of `total` when known
 *  (null: a list without a total, which has more while its page is full). */
export function pager({ offset, shown, size, total, label, go }) {
  const more = total === null ? shown >= size : offset + shown < total;
  if (offset === 0 && !more) return null;
  const from = shown ? offset + 1 : offset;
  const to = offset + shown;
  const where = total === null ? t("browse.range", { from, to }) : t("runs.page", { from, to, total });
  return h("nav", { class: "pager", "aria-label": label },
    h("button", { type: "button", class: "secondary", disabled: offset === 0, onclick: () => go(-1) }, t("runs.prev")),
    h("span", {}, where),
    h("button", { type: "button", class: "secondary", disabled: !more, onclick: () => go(1) }, t("runs.next")));
}

/** A failure as the user sees it: the server's own message, verbatim. */
export function alertBox(message, id) {
  return h("p", { class: "error", role: "alert", id }, message);
}

/** `text` cut to `limit` characters, with a button that shows all of it. */
export function longText(text, limit = 400) {
  const full = String(text ?? "");
  if (full.length <= limit) return h("div", { class: "long" }, full);
  const box = h("div", { class: "long" });
  const body = h("span", {}, `${full.slice(0, limit)}…`);
  let open = false;
  const toggle = h("button", { type: "button", class: "link", "aria-expanded": "false", onclick: () => {
    open = !open;
    body.textContent = open ? full : `${full.slice(0, limit)}…`;
    toggle.textContent = open ? t("browse.less") : t("browse.more");
    toggle.setAttribute("aria-expanded", String(open));
  } }, t("browse.more"));
  box.append(body, " ", toggle);
  return box;
}

/** A table with a caption, its header cells from `head` (already translated) and `rows`. */
export function table(cls, caption, head, rows) {
  return h("div", { class: "table-wrap" },
    h("table", { class: `runs ${cls}` },
      caption ? h("caption", {}, caption) : null,
      h("thead", {}, h("tr", {}, head.map((name) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, rows)));
}
