// The JSON API as the page uses it: the session cookie goes with every request (same origin),
// the CSRF token with every change; an envelope's failure becomes an ApiError.
export const BASE = "/api/v2/serve";
const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);
let csrf = { header: "X-CSRF-Token", token: null };

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function envelope(response, path) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(response.status, `HTTP ${response.status}`);
  }
  if (!response.ok || body.success === false) {
    const error = new ApiError(response.status, body.err_msg || `HTTP ${response.status}`);
    // a data route refusing this browser: its session ended (the key form's own 401 is not)
    if (response.status === 401 && !path.startsWith("/ui/")) window.dispatchEvent(new CustomEvent("ragmeter:auth"));
    throw error;
  }
  return body.data;
}

/** `method` on `path` (under /api/v2/serve unless it starts with /ui), JSON in and out. */
export async function call(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (UNSAFE.has(method) && csrf.token) headers[csrf.header] = csrf.token;
  const url = path.startsWith("/ui/") ? path : BASE + path;
  const response = await fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return envelope(response, path);
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body);
export const patch = (path, body) => call("PATCH", path, body);
export const del = (path) => call("DELETE", path);

/** Whether this server wants a key and whether this browser holds a session. */
export async function sessionState() {
  const state = await call("GET", "/ui/session");
  csrf = { header: state.csrf_header, token: state.csrf_token };
  return state;
}

/** Trade the key for a session cookie; the key goes in a POST body, never a URL. */
export async function signIn(key) {
  const state = await call("POST", "/ui/session", { key });
  csrf = { header: state.csrf_header, token: state.csrf_token };
  return state;
}

export async function signOut() {
  await call("POST", "/ui/logout");
  csrf = { header: csrf.header, token: null };
}

/** A query string from an object, leaving out empty values; an array repeats its name. */
export function query(params) {
  const found = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one !== undefined && one !== null && one !== "") found.append(name, String(one));
    }
  }
  const text = found.toString();
  return text ? `?${text}` : "";
}

/** POST `form` (a FormData: a file upload) to `path`, with the CSRF header, JSON back. */
export async function upload(path, form) {
  const headers = { Accept: "application/json" };
  if (csrf.token) headers[csrf.header] = csrf.token;
  const response = await fetch(BASE + path, { method: "POST", headers, credentials: "same-origin", body: form });
  return envelope(response, path);
}
