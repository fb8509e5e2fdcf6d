// Hash routes (`#/runs?state=done&q=abc`): the view and its filters live in the URL, so a
// reload or a shared link shows the same page.

/** The current route: its view name, the id after it (`#/runs/<id>`), its parameters, and
 * the path parts after the id (`#/runs/<id>/rows/3` -> `rest` ["rows", "3"]). */
export function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, search = ""] = hash.split("?");
  const [view, id = "", ...rest] = path.split("/");
  return { view: view || "runs", id: decodeURIComponent(id), params: new URLSearchParams(search), rest: rest.map(decodeURIComponent) };
}

/** Put `params` in the URL of `view` without re-rendering (replaces the history entry). */
export function replaceParams(view, params) {
  const text = params.toString();
  history.replaceState(null, "", `#/${view}${text ? `?${text}` : ""}`);
}
