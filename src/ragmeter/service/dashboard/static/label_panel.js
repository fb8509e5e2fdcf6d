// The labelling panel of the Row view: the caller's label of this row on one metric, opened
// from a review queue (`?queue=<id>`: its metric, the caller's rows in order, progress) or on
// any row by a user who may label (`?label=<metric>`; without it the panel only offers to
// start, so reading a row never hides anything). Keyboard:
// 1/0 pass/fail (0-1 metrics; or type a number), 0-5 for 0-5 metrics, j/k next/previous row,
// c the comment. The judge's score and reasoning for the metric stay hidden until this
// reviewer has labelled the row (no anchoring), then they are shown.
import { ApiError, call, get } from "./api.js";
import { announce, h } from "./dom.js";
import { t } from "./i18n.js";

const LABELLERS = new Set(["admin", "reviewer"]);

/** Who the page acts as ({name, role}); asked each time (a sign-out and in changes it). */
export function whoami() {
  return get("/whoami");
}

/** [low, high] from a scale text such as "0–1" or "0-5"; null otherwise. */
function parseScale(text) {
  const found = /^(-?\d+(?:\.\d+)?)\s*[–-]\s*(-?\d+(?:\.\d+)?)$/.exec(text || "");
  return found ? [Number(found[1]), Number(found[2])] : null;
}

/** The keys that label directly: "pass" (1/0) for 0-1, "grades" (0-5) for 0-5, else none. */
function keysOf(scale) {
  if (!scale) return "none";
  if (scale[0] === 0 && scale[1] === 1) return "pass";
  if (scale[0] === 0 && scale[1] === 5) return "grades";
  return "none";
}

/** Hide a result card's score and reasoning (kept to put back), or show them again. */
function mask(card, hidden) {
  if (!card) return;
  if (hidden && !card.masked) {
    card.masked = [...card.children].slice(1);
    for (const child of card.masked) child.remove();
    card.classList.add("masked");
    card.append(h("p", { class: "muted masked-note" }, t("review.masked")));
  } else if (!hidden && card.masked) {
    card.querySelector(".masked-note")?.remove();
    card.append(...card.masked);
    card.masked = null;
    card.classList.remove("masked");
  }
}

const typing = (el) => el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT");

export class LabelPanel {
  /** `view` is the Row view (its run id, row index, params, detail and result cards). */
  constructor(view, run, queue, labels, user) {
    this.view = view;
    this.run = run;
    this.queue = queue;
    this.metric = queue ? queue.queue.metric : view.params.get("label");
    this.offer = !this.metric;
    const scale = queue ? queue.queue.scale : parseScale(((run.summary || {})[this.metric] || {}).scale);
    this.scale = scale;
    this.keys = keysOf(scale);
    this.mine = labels.find((lb) => lb.metric === this.metric) || null;
    this.user = user;
    this.onKey = (event) => this.key(event);
  }

  /** The panel for `view`, or null for a user who may not label (a viewer, a member). */
  static async open(view) {
    const user = await whoami();
    if (!LABELLERS.has(user.role)) return null;
    const run = encodeURIComponent(view.id);
    const queueId = view.params.get("queue");
    const [info, queue, labels] = await Promise.all([
      get(`/evaluate/runs/${run}`),
      queueId ? get(`/evaluate/runs/${run}/reviews/${encodeURIComponent(queueId)}`) : null,
      get(`/evaluate/runs/${run}/rows/${encodeURIComponent(view.index)}/labels`),
    ]);
    return new LabelPanel(view, info, queue, labels, user);
  }

  card() {
    return this.view.root.querySelector(`.result-card[data-metric="${CSS.escape(this.metric)}"]`);
  }

  items() {
    return this.queue ? this.queue.items : [];
  }

  here() {
    return this.items().findIndex((item) => item.row_index === Number(this.view.index));
  }

  progressText() {
    const items = this.items();
    return t("review.progress", { done: items.filter((i) => i.done).length, total: items.length });
  }

  /** Without a queue or a metric chosen: a metric picker that starts labelling. */
  renderOffer() {
    const run = encodeURIComponent(this.view.id);
    const pick = h("select", { id: "label-metric" }, this.run.metrics.map((m) => h("option", { value: m }, m)));
    return h("section", { class: "label-panel offer", id: "label-panel", "aria-labelledby": "label-title" },
      h("h2", { id: "label-title" }, t("review.offer")),
      h("form", { class: "label-form", onsubmit: (event) => {
        event.preventDefault();
        location.hash = `#/runs/${run}/rows/${encodeURIComponent(this.view.index)}?label=${encodeURIComponent(pick.value)}`;
      } },
        h("label", { for: "label-metric" }, t("review.metric")), pick,
        h("button", { type: "submit" }, t("review.start"))));
  }

  render() {
    if (this.offer) return this.renderOffer();
    const bounds = this.scale ? `${this.scale[0] ?? ""}–${this.scale[1] ?? ""}` : t("review.anyValue");
    this.value = h("input", { id: "label-value", type: "number", step: "any", class: "short", value: this.mine ? this.mine.value : "",
      min: this.scale ? this.scale[0] : null, max: this.scale ? this.scale[1] : null, "aria-describedby": "label-keys" });
    this.comment = h("textarea", { id: "label-comment", rows: 2, maxlength: 2000 }, this.mine ? this.mine.comment : "");
    this.status = h("p", { class: "label-status", id: "label-status", role: "status" }, this.statusText());
    this.progress = this.queue ? h("p", { class: "review-progress num", id: "review-progress" }, this.progressText()) : null;
    const keys = t(`review.keys.${this.keys}`) + " " + t(this.queue ? "review.keys.queue" : "review.keys.rows");
    this.panel = h("section", { class: "label-panel", id: "label-panel", "aria-labelledby": "label-title" },
      h("h2", { id: "label-title" }, t("review.panel", { metric: this.metric })),
      this.queue ? h("p", { class: "small" }, h("a", { href: `#/runs/${encodeURIComponent(this.view.id)}/review` }, t("review.back"))) : null,
      this.progress,
      h("p", { class: "muted small", id: "label-keys" }, keys),
      h("form", { class: "label-form", onsubmit: (event) => { event.preventDefault(); this.save(Number(this.value.value)); } },
        h("label", { for: "label-value" }, t("review.value", { scale: bounds })), this.value,
        h("label", { for: "label-comment" }, t("review.comment")), this.comment,
        h("button", { type: "submit" }, t("review.save")),
        this.mine ? h("button", { type: "button", class: "secondary", onclick: () => this.remove() }, t("review.remove")) : null),
      this.status);
    mask(this.card(), !this.mine);
    document.addEventListener("keydown", this.onKey);
    return this.panel;
  }

  statusText() {
    if (!this.mine) return t("review.unlabelled");
    return t("review.labelled", { value: this.mine.value });
  }

  async save(value) {
    if (!Number.isFinite(value)) {
      this.status.textContent = t("review.needValue");
      return;
    }
    const run = encodeURIComponent(this.view.id);
    const body = { metric: this.metric, value, comment: this.comment.value };
    try {
      this.mine = await call("PUT", `/evaluate/runs/${run}/rows/${encodeURIComponent(this.view.index)}/labels`, body);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.status.textContent = t("error", { message: error.message });
      return;
    }
    this.value.value = String(this.mine.value);
    const item = this.items()[this.here()];
    if (item) { item.done = true; item.value = this.mine.value; }
    if (this.progress) this.progress.textContent = this.progressText();
    this.status.textContent = this.statusText();
    mask(this.card(), false);
    announce(t("review.saved", { value: this.mine.value }));
  }

  async remove() {
    const run = encodeURIComponent(this.view.id);
    const path = `/evaluate/runs/${run}/rows/${encodeURIComponent(this.view.index)}/labels?metric=${encodeURIComponent(this.metric)}`;
    await call("DELETE", path);
    this.mine = null;
    location.reload();
  }

  /** The row `step` places away: in the queue's order, else the run's. */
  go(step) {
    const run = encodeURIComponent(this.view.id);
    if (this.queue) {
      const items = this.items();
      const next = items[this.here() + step];
      if (!next) { announce(t(step > 0 ? "review.last" : "review.first")); return; }
      location.hash = `#/runs/${run}/rows/${next.row_index}?queue=${encodeURIComponent(this.queue.queue.id)}`;
      return;
    }
    const index = step > 0 ? this.view.detail.next : this.view.detail.previous;
    if (index === null || index === undefined) return;
    location.hash = `#/runs/${run}/rows/${index}?label=${encodeURIComponent(this.metric)}`;
  }

  key(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(document.activeElement)) return;
    const { key } = event;
    if (key === "j" || key === "k") { event.preventDefault(); this.go(key === "j" ? 1 : -1); return; }
    if (key === "c") { event.preventDefault(); this.comment.focus(); return; }
    const allowed = this.keys === "pass" ? ["0", "1"] : this.keys === "grades" ? ["0", "1", "2", "3", "4", "5"] : [];
    if (allowed.includes(key)) {
      event.preventDefault();
      this.save(Number(key));
    }
  }

  stop() {
    if (this.offer) return;
    document.removeEventListener("keydown", this.onKey);
  }
}
