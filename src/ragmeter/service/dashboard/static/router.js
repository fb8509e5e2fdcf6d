// Hash routes (`#/runs?state=done&q=abc`): the view and its filters live in the URL, so a
// reload or a shared link shows the same page.

/** The current route: its view name and its parameters. */
export function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, search = ""] = hash.split("?");
  return { view: path.split("/")[0] || "runs", params: new URLSearchParams(search) };
}

/** Put `params` in the URL of `view` without re-rendering (replaces the history entry). */
export function replaceParams(view, params) {
  const text = params.toString();
  history.replaceState(null, "", `#/${view}${text ? `?${text}` : ""}`);
}
