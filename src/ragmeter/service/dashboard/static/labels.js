// What a user says about a run (its name, tags and note) and what it ran on, as the Runs, Run
// and Compare views show them; the dialog that edits them, confirms a deletion and shows a
// refusal (a 409 says why) instead of swallowing it.
import { ApiError, patch } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";

/** A run's dataset version: "qa@2", or "inline rows" for rows sent with the run. */
export function datasetText(dataset) {
  const d = dataset || {};
  if (!d.name) return t("lineage.inline");
  return d.version ? `${d.name}@${d.version}` : d.name;
}

/** What to call a run: its name, else its target label, else its short id. */
export function runTitle(run) {
  return run.name || run.label || run.run_id.slice(0, 12);
}

/** The picker text of a run: name, dataset version, target and short id (the first two
 *  first: a narrow picker cuts the end). */
export function runChoice(run) {
  const parts = [run.name, datasetText(run.dataset), run.label].filter(Boolean);
  return `${[...new Set(parts)].join(" · ")} (${run.run_id.slice(0, 8)})`;
}

/** Tags as chips; with `pick`, each is a button that filters by it. */
export function tagChips(tags, pick) {
  if (!tags || !tags.length) return h("span", { class: "muted small" }, "–");
  return h("ul", { class: "chips" }, tags.map((tag) => h("li", {},
    pick
      ? h("button", { type: "button", class: "chip", "data-tag": tag, title: t("tags.filterBy", { tag }),
        onclick: () => pick(tag) }, tag)
      : h("span", { class: "chip", "data-tag": tag }, tag))));
}

/** Tags typed as text: split on spaces and commas, without repeats. */
export function parseTags(text) {
  return [...new Set(String(text || "").split(/[\s,]+/).filter(Boolean))];
}

/** PATCH of run `runId` to make its name, tags and note `wanted` (fields left out stay). */
export function relabel(runId, run, wanted) {
  const body = {};
  if (wanted.name !== undefined && wanted.name.trim() && wanted.name.trim() !== (run.name || "")) body.name = wanted.name.trim();
  if (wanted.note !== undefined && wanted.note !== (run.note || "")) body.note = wanted.note;
  if (wanted.tags !== undefined) {
    const tags = parseTags(wanted.tags);
    body.add_tags = tags.filter((tag) => !run.tags.includes(tag));
    body.remove_tags = run.tags.filter((tag) => !tags.includes(tag));
  }
  return patch(`/evaluate/runs/${encodeURIComponent(runId)}`, body);
}

/**
 * A modal dialog: a title, an optional message, `fields` ({name, label, value, multiline,
 * hint}) and a submit button. `submit(values)` runs on submit; its ApiError is shown in the
 * dialog, which stays open; on success the dialog closes and `done(answer)` runs.
 */
export function openDialog({ title, message, fields = [], action, danger = false, submit, done }) {
  const inputs = {};
  const error = h("p", { class: "error", role: "alert" });
  const rows = fields.map((f) => {
    const id = `dlg-${f.name}`;
    const input = f.multiline
      ? h("textarea", { id, name: f.name, rows: 4, maxlength: f.max }, f.value || "")
      : h("input", { id, name: f.name, type: "text", value: f.value || "", maxlength: f.max, "aria-describedby": f.hint ? `${id}-hint` : null });
    inputs[f.name] = input;
    return h("div", { class: "field" }, h("label", { for: id }, f.label), input,
      f.hint ? h("p", { class: "muted small", id: `${id}-hint` }, f.hint) : null);
  });
  const button = h("button", { type: "submit", class: danger ? "danger" : null }, action);
  const dialog = h("dialog", { class: "edit-dialog", "aria-labelledby": "dlg-title" });
  const close = () => { dialog.close(); dialog.remove(); };
  const form = h("form", { method: "dialog", onsubmit: async (event) => {
    event.preventDefault();
    error.textContent = "";
    button.disabled = true;
    const values = Object.fromEntries(Object.entries(inputs).map(([name, input]) => [name, input.value]));
    let answer;
    try {
      answer = await submit(values);
    } catch (failure) {
      if (!(failure instanceof ApiError)) throw failure;
      error.textContent = t("error", { message: failure.message });
      button.disabled = false;
      return;
    }
    close();
    if (done) done(answer);
  } },
    h("h2", { id: "dlg-title" }, title),
    message ? h("p", {}, message) : null,
    ...rows,
    error,
    h("div", { class: "dialog-buttons" }, button,
      h("button", { type: "button", class: "secondary", onclick: close }, t("dialog.cancel"))));
  dialog.append(form);
  dialog.addEventListener("cancel", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  const first = Object.values(inputs)[0];
  if (first) first.select();
  return dialog;
}

/** The fields that edit a run's name, tags and note (`which`: a subset of them). */
export function labelFields(run, which = ["name", "tags", "note"]) {
  const all = {
    name: { name: "name", label: t("labels.name"), value: run.name || "", max: 200, hint: t("labels.nameHint") },
    tags: { name: "tags", label: t("labels.tags"), value: (run.tags || []).join(" "), hint: t("labels.tagsHint") },
    note: { name: "note", label: t("labels.note"), value: run.note || "", max: 4000, multiline: true },
  };
  return which.map((name) => all[name]);
}

/** The Run view's card of a run's name, tags (links to the runs with that tag) and note,
 *  with an Edit button; `changed(run)` gets the run as the PATCH answered it. */
export function labelsCard(run, changed) {
  const title = runTitle(run);
  const tags = run.tags.length
    ? h("ul", { class: "chips" }, run.tags.map((tag) => h("li", {},
      h("a", { class: "chip", "data-tag": tag, href: `#/runs?${new URLSearchParams({ tag })}`, title: t("tags.filterBy", { tag }) }, tag))))
    : h("span", { class: "muted" }, t("labels.noTags"));
  const fact = (key, ...value) => h("div", { class: "fact", "data-fact": key }, h("dt", {}, t(`labels.${key}`)), h("dd", {}, ...value));
  return h("section", { class: "card labels", id: "run-labels", "aria-labelledby": "labels-title" },
    h("div", { class: "title-row" }, h("h2", { id: "labels-title" }, t("labels.title")),
      h("button", { type: "button", class: "secondary", id: "edit-labels", onclick: () => openDialog({
        title: t("labels.editTitle", { name: title }), fields: labelFields(run), action: t("dialog.save"),
        submit: (values) => relabel(run.run_id, run, values), done: changed }) }, t("labels.edit"))),
    h("dl", { class: "lineage-facts" },
      fact("name", run.name || h("span", { class: "muted" }, t("labels.unnamed"))),
      fact("tags", tags),
      fact("note", run.note ? h("span", { class: "note-text" }, run.note) : h("span", { class: "muted" }, t("labels.noNote")))));
}
