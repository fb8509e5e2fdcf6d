// Building elements without innerHTML: text is always text, never markup.

/** `h("a", {href: "#/runs", class: "x"}, "text", child)`; `on*` attributes become listeners. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Say something to screen readers and sighted users in the status line. */
export function announce(text) {
  const box = document.getElementById("status");
  box.textContent = text;
  box.classList.toggle("shown", Boolean(text));
  clearTimeout(announce.timer);
  announce.timer = setTimeout(() => box.classList.remove("shown"), 4000);
}
