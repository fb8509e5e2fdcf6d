// Reviewers' flags on a production trace: the marker a row of the Traces list carries, and the
// panel of one trace (`#/traces/<id>`) showing who flagged it, with which label and why. A
// user who may flag (admin, member, reviewer) flags it as themselves with a label and a note,
// changes their flag or removes it; an admin removes anyone's.
import { ApiError, call } from "./api.js";
import { announce, h } from "./dom.js";
import { t } from "./i18n.js";
import { alertBox, when } from "./widgets.js";

/** the labels a flag takes (the API's set) */
export const FLAG_LABELS = ["wrong", "good_example", "needs_review", "other"];
/** roles that may flag a trace */
const FLAGGERS = new Set(["admin", "member", "reviewer"]);
/** characters of a flag's note (the API's cap) */
const NOTE_MAX = 2000;
const enc = encodeURIComponent;

/** A label as a badge. */
export function flagBadge(label) {
  return h("span", { class: `badge flag flag-${label}`, "data-flag": label }, t(`flags.label.${label}`));
}

/** A list row's marker: how many flagged the trace, its labels on hover (none: nothing). */
export function flagMarker(trace) {
  if (!trace.flags) return null;
  const labels = trace.flag_labels.map((l) => t(`flags.label.${l}`)).join(", ");
  const text = t(trace.flags === 1 ? "flags.marker1" : "flags.marker", { n: trace.flags, labels });
  return h("span", { class: "badge flag flag-marker", title: text, "aria-label": text, "data-flags": trace.flags },
    h("span", { "aria-hidden": "true" }, `⚑ ${trace.flags}`));
}

/** The flags of one trace and the caller's own flag form; `user` is {name, role} or null. */
export class FlagPanel {
  constructor(traceId, flags, user) {
    this.traceId = traceId;
    this.flags = [...flags];
    this.user = user;
    this.box = h("section", { class: "card flags-card", id: "trace-flags", "aria-labelledby": "tr-flags" });
    this.outcome = h("div", { id: "flag-outcome", "aria-live": "polite" });
    this.render();
  }

  mine() {
    return this.user ? this.flags.find((f) => f.user === this.user.name) : undefined;
  }

  render() {
    const list = this.flags.length
      ? h("ul", { class: "flags", id: "flag-list" }, this.flags.map((f) => this.item(f)))
      : h("p", { class: "muted", id: "flag-list" }, t("flags.none"));
    const form = this.user && FLAGGERS.has(this.user.role) ? this.form() : null;
    this.box.replaceChildren(...[h("h2", { id: "tr-flags" }, t("flags.title")),
      h("p", { class: "muted small" }, t("flags.help")), list, form, this.outcome].filter(Boolean));
  }

  item(flag) {
    const removable = this.user && (this.user.role === "admin" || flag.user === this.user.name);
    return h("li", { "data-user": flag.user, "data-flag": flag.label }, flagBadge(flag.label), " ",
      h("strong", {}, flag.user), " ", h("span", { class: "muted small" }, when(flag.created_at)),
      removable ? [" ", h("button", { type: "button", class: "link unflag", onclick: () => this.remove(flag.user) },
        flag.user === this.user.name ? t("flags.removeMine") : t("flags.removeTheirs", { user: flag.user }))] : null,
      flag.note ? h("p", { class: "flag-note" }, flag.note) : null);
  }

  form() {
    const mine = this.mine();
    const label = h("select", { id: "flag-label", name: "label" },
      FLAG_LABELS.map((l) => h("option", { value: l, selected: mine ? mine.label === l : l === "wrong" }, t(`flags.label.${l}`))));
    const note = h("textarea", { id: "flag-note", name: "note", rows: 2, maxlength: NOTE_MAX, placeholder: t("flags.noteHint") });
    note.value = mine && mine.note ? mine.note : "";
    const submit = h("button", { type: "submit", id: "flag-trace" }, mine ? t("flags.change") : t("flags.flag"));
    return h("form", { class: "flag-form", onsubmit: (e) => {
      e.preventDefault();
      this.put(submit, label.value, note.value.trim());
    } }, h("label", { for: "flag-label" }, t("flags.label")), label,
    h("label", { for: "flag-note" }, t("flags.note")), note, submit);
  }

  async put(button, label, note) {
    button.disabled = true;
    try {
      const kept = await call("PUT", `/traces/${enc(this.traceId)}/flag`, note ? { label, note } : { label });
      this.flags = [...this.flags.filter((f) => f.user !== kept.user), kept];
      this.done(t("flags.flagged", { label: t(`flags.label.${label}`) }));
    } catch (error) {
      this.failed(error);
    } finally {
      button.disabled = false;
    }
  }

  async remove(user) {
    const theirs = user !== this.user.name ? `?user=${enc(user)}` : "";
    try {
      await call("DELETE", `/traces/${enc(this.traceId)}/flag${theirs}`);
      this.flags = this.flags.filter((f) => f.user !== user);
      this.done(t("flags.removed", { user }));
    } catch (error) {
      this.failed(error);
    }
  }

  done(text) {
    this.render();
    this.outcome.replaceChildren(h("p", { class: "ok", role: "status" }, text));
    announce(text);
  }

  failed(error) {
    if (!(error instanceof ApiError)) throw error;
    this.outcome.replaceChildren(alertBox(error.message, "flag-error"));
  }
}
