// The New run form (`#/newrun`, `?dataset=<name>` picks one): a stored dataset, the scene and
// its target (none / a space with retriever and top_k / an app), metrics of that scene, a judge
// model, parallelism. It posts DB-GPT's EvaluateServeRequest to /evaluate/runs and opens the
// run's page, where progress shows. Mistakes are named before sending; a refusal is the server's.
import { get, post, query } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { metricText } from "./metric_text.js";
import { alertBox } from "./widgets.js";

const RETRIEVERS = ["vector", "bm25", "hybrid"];
/** the form's scenes: the target each one evaluates */
const SCENES = ["dataset", "recall", "app"];
const MAX_PARALLEL = 64;

function select(id, options, chosen) {
  return h("select", { id, name: id },
    options.map(([value, label]) => h("option", { value, selected: value === chosen }, label)));
}

function field(id, label, control, help) {
  return h("div", { class: "field" }, h("label", { for: id }, label), control,
    help ? h("p", { class: "muted small", id: `${id}-help` }, help) : null);
}

/** A whole number in [low, high], or null. */
function whole(text, low, high) {
  const n = Number(text);
  return Number.isInteger(n) && n >= low && n <= high ? n : null;
}

export class NewRunView {
  constructor(root, params) {
    this.root = root;
    this.params = params;
    this.stopped = false;
    this.metrics = [];
  }

  stop() {
    this.stopped = true;
  }

  async start() {
    this.root.replaceChildren(h("p", { class: "loading" }, t("loading"))); // not the last view's page
    const [datasets, models, spaces, apps] = await Promise.all([
      get(`/datasets${query({ limit: 1000 })}`), get("/models"),
      get(`/knowledge/spaces${query({ limit: 1000 })}`), get(`/apps${query({ limit: 1000 })}`),
    ]);
    if (this.stopped) return;
    this.note = h("div", { id: "nr-errors", role: "alert", class: "error" });
    this.metricBox = h("div", { id: "nr-metrics", class: "metric-choices", "aria-live": "polite" });
    const form = h("form", { class: "new-run card", novalidate: true, onsubmit: (e) => { e.preventDefault(); this.submit(); } },
      this.datasetField(datasets.items),
      this.targetFields(spaces, apps),
      h("fieldset", {}, h("legend", {}, t("newrun.metrics")), this.metricBox),
      this.judgeField(models),
      field("nr-parallel", t("newrun.parallel"),
        h("input", { id: "nr-parallel", type: "number", min: 1, max: MAX_PARALLEL, step: 1, value: 8, class: "short",
          "aria-describedby": "nr-parallel-help" }), t("newrun.parallelHelp", { max: MAX_PARALLEL })),
      this.note,
      h("div", { class: "actions" },
        h("button", { type: "submit", id: "nr-submit" }, t("newrun.submit")),
        h("a", { href: "#/runs", class: "button secondary" }, t("newrun.cancel"))));
    this.form = form;
    this.root.replaceChildren(h("p", {}, h("a", { href: "#/runs" }, t("run.back"))),
      h("h1", {}, t("newrun.title")), h("p", { class: "muted" }, t("newrun.intro")), form);
    this.showTarget();
    await this.loadMetrics();
  }

  datasetField(datasets) {
    const wanted = this.params.get("dataset") || "";
    const options = [["", t("newrun.pick")], ...datasets.map((d) => [d.name, t("newrun.datasetOption", { name: d.name, n: d.row_count })])];
    if (wanted && !datasets.some((d) => d.name === wanted)) options.push([wanted, wanted]);
    this.dataset = select("nr-dataset", options, wanted);
    const help = datasets.length ? null : h("span", {}, t("newrun.noDatasets"), " ", h("a", { href: "#/datasets" }, t("nav.datasets")));
    return h("div", { class: "field" }, h("label", { for: "nr-dataset" }, t("newrun.dataset")), this.dataset,
      help ? h("p", { class: "muted small" }, help) : null);
  }

  targetFields(spaces, apps) {
    this.scene = "dataset";
    this.space = select("nr-space", [["", t("newrun.pick")], ...spaces.map((s) => [s.name, s.name])], "");
    this.retriever = select("nr-retriever", RETRIEVERS.map((r) => [r, r]), "vector");
    this.topK = h("input", { id: "nr-topk", type: "number", min: 1, step: 1, value: 5, class: "short" });
    this.app = select("nr-app", [["", t("newrun.pick")], ...apps.map((a) => [a.name, `${a.name} (${a.kind})`])], "");
    this.recallBox = h("div", { class: "target", id: "nr-recall" },
      field("nr-space", t("newrun.space"), this.space, spaces.length ? null : t("newrun.noSpaces")),
      field("nr-retriever", t("newrun.retriever"), this.retriever),
      field("nr-topk", "top_k", this.topK));
    this.appBox = h("div", { class: "target", id: "nr-app-box" },
      field("nr-app", t("newrun.app"), this.app, apps.length ? null : t("newrun.noApps")));
    const boxes = { recall: this.recallBox, app: this.appBox };
    const radios = SCENES.map((key) => {
      const input = h("input", { type: "radio", name: "nr-scene", id: `nr-scene-${key}`, value: key, checked: key === "dataset",
        "aria-describedby": `nr-scene-${key}-help`, onchange: () => { this.scene = key; this.showTarget(); this.loadMetrics(); } });
      return h("div", { class: "choice" }, input,
        h("label", { for: `nr-scene-${key}` }, t(`newrun.scene.${key}`)),
        h("p", { class: "muted small", id: `nr-scene-${key}-help` }, t(`newrun.sceneHelp.${key}`)),
        boxes[key]);
    });
    return h("fieldset", {}, h("legend", {}, t("newrun.target")), radios);
  }

  showTarget() {
    this.recallBox.hidden = this.scene !== "recall";
    this.appBox.hidden = this.scene !== "app";
  }

  judgeField(models) {
    this.judge = select("nr-judge", [["", t("newrun.noJudge")], ...models.map((m) => [m.name, m.name])], "");
    return field("nr-judge", t("newrun.judge"), this.judge, models.length ? t("newrun.judgeHelp") : t("newrun.noModels"));
  }

  /** The scene's metrics as checkboxes; a choice still offered stays checked. */
  async loadMetrics() {
    const scene = this.scene;
    const kept = new Set(this.checked().map((m) => m.name));
    this.metricBox.replaceChildren(h("p", { class: "loading" }, t("loading")));
    let metrics;
    try {
      metrics = await get(`/evaluate/metrics${query({ scene_key: scene })}`);
    } catch (error) {
      if (!this.stopped) this.metricBox.replaceChildren(alertBox(error.message));
      return;
    }
    if (this.stopped || scene !== this.scene) return;
    this.metrics = metrics;
    this.metricBox.replaceChildren(...metrics.map((m, i) => {
      const id = `nr-metric-${i}`;
      return h("div", { class: "choice metric-choice" },
        h("input", { type: "checkbox", id, name: "metric", value: m.name, checked: kept.has(m.name), "aria-describedby": `${id}-help` }),
        h("label", { for: id }, m.name, m.needs_judge ? h("span", { class: "badge judge" }, t("newrun.needsJudge")) : null),
        h("p", { class: "muted small", id: `${id}-help` }, metricText(m)));
    }));
  }

  checked() {
    const names = new Set([...this.root.querySelectorAll('input[name="metric"]:checked')].map((box) => box.value));
    return this.metrics.filter((m) => names.has(m.name));
  }

  /** The request body, or null after listing every mistake (the first field gets focus). */
  request() {
    const problems = [];
    const wrong = (control, key, params) => problems.push({ control, text: t(key, params) });
    if (!this.dataset.value) wrong(this.dataset, "newrun.needDataset");
    const context = {};
    if (this.scene === "recall") {
      if (!this.space.value) wrong(this.space, "newrun.needSpace");
      const k = whole(this.topK.value, 1, Number.MAX_SAFE_INTEGER);
      if (k === null) wrong(this.topK, "newrun.badTopK");
      context.top_k = k;
      context.retriever = this.retriever.value;
    }
    if (this.scene === "app" && !this.app.value) wrong(this.app, "newrun.needApp");
    const metrics = this.checked();
    if (!metrics.length) wrong(this.metricBox.querySelector("input") || this.metricBox, "newrun.needMetric");
    const judged = metrics.filter((m) => m.needs_judge).map((m) => m.name);
    if (judged.length && !this.judge.value) wrong(this.judge, "newrun.needJudge", { names: judged.join(", ") });
    if (this.judge.value) context.model = this.judge.value;
    const parallel = document.getElementById("nr-parallel");
    const n = whole(parallel.value, 1, MAX_PARALLEL);
    if (n === null) wrong(parallel, "newrun.badParallel", { max: MAX_PARALLEL });
    this.note.replaceChildren(...(problems.length
      ? [h("p", {}, t("newrun.fix")), h("ul", {}, problems.map((p) => h("li", {}, p.text)))] : []));
    if (problems.length) {
      problems[0].control.focus();
      return null;
    }
    const target = { recall: this.space.value, app: this.app.value }[this.scene];
    return {
      scene_key: this.scene, scene_value: target || null, datasets_name: this.dataset.value,
      evaluate_metrics: metrics.map((m) => m.name), parallel_num: n,
      context: Object.keys(context).length ? context : null,
    };
  }

  async submit() {
    const body = this.request();
    if (!body) return;
    const button = document.getElementById("nr-submit");
    button.disabled = true;
    try {
      const created = await post("/evaluate/runs", body);
      location.hash = `#/runs/${encodeURIComponent(created.run_id)}`;
    } catch (error) {
      this.note.replaceChildren(h("p", {}, error.message));
      button.disabled = false;
    }
  }
}
