// How the Run and Compare views show a statistic: a metric's name with its scale beside it
// (`mrr (0–1)`, `AnswerRelevancyMetric (0–5)`), and an interval the server flags as not
// informative (`ci_note`: fewer than 30 values, or all equal) as words instead of numbers.
import { h } from "./dom.js";
import { t } from "./i18n.js";

/** A metric's name with its scale beside it, where the server knows the scale. */
export function scaled(name, scale) {
  return scale ? [name, " ", h("span", { class: "muted scale" }, `(${scale})`)] : name;
}

/** "interval not informative (n=…)", explained on hover, when `note` flags the interval;
 *  null when the interval is worth showing. */
export function notInformative(note, n) {
  if (!note) return null;
  return h("span", { class: "muted ci-note", title: `${t("ci.why")} (${note})` }, t("ci.notInformative", { n }));
}
