// How the Run and Compare views show a statistic: a metric's name with its scale beside it
// (`mrr (0–1)`, `AnswerRelevancyMetric (0–5)`), and an interval the server flags as not
// informative (`ci_note`: fewer than 30 values, or all equal) as words instead of numbers;
// a difference, a p-value and a verdict as Compare and Monitor write them.
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

const VERDICT_MARK = { better: "▲", worse: "▼", no_evidence: "·", equivalent: "=" };

/** A difference with its sign: +0.120, −0.050, 0.000. */
export function signed(value, digits = 3) {
  if (value === null || value === undefined) return "–";
  const text = Math.abs(value).toFixed(digits);
  if (Number(text) === 0) return text;
  return `${value < 0 ? "−" : "+"}${text}`;
}

/** A p-value: 0.042, or "< 0.001". */
export function pValue(value) {
  if (value === null || value === undefined) return "–";
  return value < 0.001 ? "< 0.001" : value.toFixed(3);
}

/** A verdict (`c.verdict`: better, worse, no_evidence or equivalent within `c.margin`) as
 * its badge; none yet: a muted dash of words. */
export function verdictBadge(c) {
  if (!c.verdict) return h("span", { class: "muted" }, t("cmp.noVerdict"));
  return h("span", { class: `badge verdict verdict-${c.verdict}`, "data-verdict": c.verdict },
    `${VERDICT_MARK[c.verdict]} ${t(`cmp.verdict.${c.verdict}`, { margin: c.margin ?? "" })}`);
}

/** A percentage as a header shows it: 95, 99, 98.33. */
export function percent(level) {
  return String(Number((100 * level).toPrecision(4)));
}
