// The dashboard's entry: language, the key form when the server wants one, and the hash router.
import { ApiError, sessionState, signIn, signOut } from "./api.js";
import { h } from "./dom.js";
import { lang, setLang, t, translateStatic } from "./i18n.js";
import { route } from "./router.js";
import { RunView } from "./run.js";
import { RowView } from "./row.js";
import { RunsView } from "./runs.js";
import { CompareView } from "./compare.js";

const VIEWS = { runs: RunsView };
const ITEM_VIEWS = { runs: RunView };
VIEWS.compare = CompareView;
ITEM_VIEWS.compare = CompareView;
const main = document.getElementById("main");
const logout = document.getElementById("logout");
let view = null;
let authRequired = false;

// the Spaces, Datasets and New run views
import { DatasetView, DatasetsView } from "./datasets.js";
import { NewRunView } from "./newrun.js";
import { SpaceView, SpacesView } from "./spaces.js";
import { AuditView } from "./audit.js";
import { ReviewView } from "./review.js";
Object.assign(VIEWS, { spaces: SpacesView, datasets: DatasetsView, newrun: NewRunView, audit: AuditView });

/** The Audit link for admins only (the server refuses the log to other roles anyway). */
function showRole(state) {
  document.getElementById("nav-audit").hidden = state.role !== "admin";
}
Object.assign(ITEM_VIEWS, { spaces: SpaceView, datasets: DatasetView });

// production traces and the Monitor view
import { TraceView, TracesView } from "./traces.js";
import { MonitorView } from "./monitor.js";
Object.assign(VIEWS, { traces: TracesView, monitor: MonitorView });
Object.assign(ITEM_VIEWS, { traces: TraceView });

function show() {
  if (view) view.stop();
  view = null;
  const { view: name, id, params, rest } = route();
  for (const link of document.querySelectorAll("nav a[data-view]")) {
    if (link.dataset.view === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const View = id ? ITEM_VIEWS[name] : VIEWS[name];
  if (!View) {
    main.replaceChildren(h("p", { class: "empty" }, t("notFound")));
    return;
  }
  if (name === "runs" && id && rest[0] === "rows") view = new RowView(main, id, params, rest[1] || "");
  else if (name === "runs" && id && rest[0] === "review") view = new ReviewView(main, id, params);
  else view = id ? new View(main, id, params) : new View(main, params);
  const current = view;
  current.start().catch((error) => {
    if (view !== current) return; // the user has moved on
    // never leave the previous view's content under the new address
    main.replaceChildren(h("p", { class: "error", role: "alert" }, t("error", { message: error.message })));
  });
}

function keyForm(message) {
  if (view) view.stop();
  view = null;
  logout.hidden = true;
  const input = h("input", { id: "api-key", name: "key", type: "password", autocomplete: "current-password", required: true });
  const note = h("p", { class: "error", role: "alert", id: "key-error" }, message || "");
  const form = h("form", { class: "key-form", method: "post", action: "#", onsubmit: async (event) => {
    event.preventDefault();
    try {
      showRole(await signIn(input.value));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      note.textContent = error.status === 401 ? t("auth.wrong") : t("error", { message: error.message });
      input.select();
      return;
    }
    input.value = "";
    logout.hidden = false;
    show();
  } },
    h("h1", {}, t("auth.title")),
    h("p", { class: "muted" }, t("auth.intro")),
    h("label", { for: "api-key" }, t("auth.key")),
    input,
    h("button", { type: "submit" }, t("auth.submit")),
    note);
  main.replaceChildren(form);
  input.focus();
}

async function boot() {
  const picker = document.getElementById("lang");
  picker.value = lang();
  translateStatic(document);
  picker.addEventListener("change", () => {
    setLang(picker.value);
    if (view) show();
    else if (document.getElementById("api-key")) keyForm();
  });
  logout.addEventListener("click", async () => {
    await signOut();
    showRole({});
    keyForm();
  });
  window.addEventListener("hashchange", () => { if (view) show(); });
  window.addEventListener("ragmeter:auth", () => { if (authRequired) keyForm(t("auth.expired")); });
  const state = await sessionState();
  authRequired = state.auth_required;
  showRole(state);
  if (state.auth_required && !state.signed_in) {
    keyForm();
    return;
  }
  logout.hidden = !state.auth_required;
  show();
}

boot().catch((error) => {
  main.replaceChildren(h("p", { class: "error", role: "alert" }, t("error", { message: error.message })));
});
