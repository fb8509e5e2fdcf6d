"""A report as one self-contained HTML file: summary, a histogram per metric, the worst rows
with the judge's reasoning and, given a comparison, each metric's paired difference and the
rows that regressed most. Every byte is inline (CSS, SVG drawn here, no script), and a
Content-Security-Policy forbids any fetch, so the file opens offline: a CI artefact or an
e-mail attachment. Every value is escaped."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ragmeter.errors import ConfigError
from ragmeter.reports.details import cut_text
from ragmeter.reports.html_agreement import agreement_section
from ragmeter.reports.html_text import LANGUAGES, TEXT, Language

if TYPE_CHECKING:
    from ragmeter.reports.record import ResultRecord
    from ragmeter.wire.compare import MetricComparison, RowPair


def shared_name(source: str) -> str:
    """A dataset's source as a report shows it to others: the file's name, never the folder
    of the machine it was read on (``/home/ana/qa/data.jsonl`` -> ``data.jsonl``)."""
    return source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or source


#: a null reason: (error kind, reason, how many results gave it)
NullCount = tuple[str | None, str, int]


class ReportLike(Protocol):
    """What this module reads of a report: ``ragmeter.reports.EvaluationReport`` in memory, or
    a stored run read in SQL (``ragmeter.runs.views.stored.StoredRun``), which never loads every
    result."""

    metric_names: list[str]
    rows: int
    seconds: float
    usage: dict[str, float] | None

    def summary(self) -> Mapping[str, Mapping[str, Any]]: ...
    def scores(self, metric_name: str) -> list[float | None]: ...
    def worst(self, metric_name: str, count: int) -> list[ResultRecord]: ...
    def null_reasons(self, metric_name: str, limit: int) -> list[NullCount]: ...


__all__ = [
    "DEFAULT_WORST",
    "MAX_WORST",
    "NullCount",
    "ReportLike",
    "check_options",
    "render_html",
    "shared_name",
    "write_page",
]

#: rows shown per metric (lowest scores, then nulls)
DEFAULT_WORST = 20
#: the most rows a report may show per metric (keeps a report of any run a few MB)
MAX_WORST = 1000
#: characters of a row's query, response or reference shown in a row card
TEXT_CHARS = 1000
#: items of a reasoning group shown, and characters of each item's text and reason (the
#: store keeps up to 200 items of 1,000 characters: a hostile response must not make the
#: file huge)
ITEMS_SHOWN = 10
ITEM_CHARS = 300
#: null reasons listed per metric (the most frequent first)
REASONS_SHOWN = 5
BINS = 10
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"
#: inlined into every report (a file beside this module, shipped in the wheel)
STYLE = (resources.files("ragmeter.reports") / "report.css").read_text(encoding="utf-8")


def render_html(
    report: ReportLike,
    *,
    title: str,
    facts: Sequence[tuple[str, str]] = (),
    comparison: Sequence[MetricComparison] = (),
    regressions: Mapping[str, Sequence[RowPair]] | None = None,
    worst: int = DEFAULT_WORST,
    language: Language = "en",
    agreement: Mapping[str, Any] | None = None,
) -> str:
    """The report as one HTML document (a string): at most ``worst`` rows per metric;
    ``agreement`` (``runs.views.agreement.run_agreement``'s dict) adds the judge's
    agreement with the run's human labels."""
    check_options(worst, language)
    text = TEXT[language]
    summary = report.summary()
    parts = [f"<h1>{_e(title)}</h1>", _facts([*facts, *_cost(report, text)])]
    parts.append(f"<h2>{text['summary']}</h2>{_summary(report, summary, text)}")
    parts.append(f"<h2>{text['distribution']}</h2><div class='grid'>")
    parts += [_histogram(name, report.scores(name), text) for name in report.metric_names]
    parts.append("</div>")
    parts.append(agreement_section(agreement, language))
    if comparison:
        parts.append(f"<h2>{text['comparison']}</h2>{_comparison(comparison, text)}")
        for name, pairs in (regressions or {}).items():
            parts.append(_regressions(name, pairs, text))
    parts.append(f"<h2>{text['worst'].format(n=worst)}</h2>")
    for name in report.metric_names:
        parts.append(_worst(name, report.worst(name, worst) if worst else [], text))
    body = "\n".join(parts)
    return (
        f"<!doctype html>\n<html lang='{language}'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )


def check_options(worst: int, language: str) -> None:
    """ConfigError naming the option unless ``worst`` is 0..MAX_WORST and ``language`` one
    the report is written in."""
    if isinstance(worst, bool) or not isinstance(worst, int) or not 0 <= worst <= MAX_WORST:
        raise ConfigError(f"worst: {worst!r} rows per metric; choose 0 to {MAX_WORST}")
    if language not in LANGUAGES:
        raise ConfigError(f"language: {language!r}; choose {' or '.join(LANGUAGES)}")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: float | None, digits: int = 4) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


#: columns whose header is right-aligned over their numbers
_TEXT_COLUMNS = frozenset({"metric", "query", "verdict"})


def _head(text: Mapping[str, str], keys: Sequence[str]) -> str:
    return "".join(
        f"<th>{text[k]}</th>" if k in _TEXT_COLUMNS else f"<th class='num'>{text[k]}</th>"
        for k in keys
    )


def _facts(facts: Sequence[tuple[str, str]]) -> str:
    items = "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
    return f"<dl class='facts'>{items}</dl>"


def _cost(report: ReportLike, text: Mapping[str, str]) -> list[tuple[str, str]]:
    usage = report.usage or {}
    tokens = int(usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
    return [
        (text["rows"], f"{report.rows:,}"),
        (text["duration"], f"{report.seconds:.1f} s"),
        (text["requests"], f"{int(usage.get('requests', 0)):,}"),
        (text["cached"], f"{int(usage.get('cached', 0)):,}"),
        (text["tokens"], f"{tokens:,}"),
    ]


def _named(name: str, scale: Any) -> str:
    """A metric's name with its scale beside it (``mrr`` and a muted ``0-1``)."""
    shown = f" <span class='muted'>({_e(scale)})</span>" if scale else ""
    return f"{_e(name)}{shown}"


def _interval(
    low: float | None, high: float | None, note: Any, n: int, text: Mapping[str, str]
) -> str:
    """An interval, or "not informative (n=...)" where ``note`` flags it."""
    if low is None or high is None:
        return "–"
    if note:
        return f"<span class='muted' title='{_e(note)}'>{text['notInformative'].format(n=n)}</span>"
    return f"{_num(low)} – {_num(high)}"


def _calibrated(s: Mapping[str, Any], text: Mapping[str, str]) -> str:
    """A metric's mean corrected by human labels, its interval and label count (a dash
    without labels)."""
    if "labelled" not in s:
        return "<td class='num'>–</td>"
    if s.get("calibrated_note"):
        ci = f"<span class='muted'>{_e(s['calibrated_note'])}</span>"
    else:
        ci = _interval(s["calibrated_low"], s["calibrated_high"], None, 0, text)
    count = text["labelsCount"].format(n=s["labelled"])
    return f"<td class='num'>{_num(s['calibrated_mean'])} ({ci}; {count})</td>"


def _summary(report: ReportLike, summary: Mapping[str, Any], text: Mapping[str, str]) -> str:
    labelled = any("labelled" in summary[name] for name in report.metric_names)
    columns = ("metric", "mean", "ci", "scored", "null", *(("calibrated",) if labelled else ()))
    lines = [f"<table><thead><tr>{_head(text, columns)}</tr></thead><tbody>"]
    for name in report.metric_names:
        s = summary[name]
        ci = _interval(s["ci95_low"], s["ci95_high"], s.get("ci_note"), s["count"], text)
        lines.append(
            f"<tr><td>{_named(name, s.get('scale'))}</td><td class='num'>{_num(s['mean'])}</td>"
            f"<td class='num'>{ci}</td><td class='num'>{s['count']:,}</td>"
            f"<td class='num'>{s['null']:,}{_null_reasons(report, name, s['null'])}</td>"
            f"{_calibrated(s, text) if labelled else ''}</tr>"
        )
    lines.append("</tbody></table>")
    if any(summary[name].get("ci_note") for name in report.metric_names):
        lines.append(f"<p class='muted'>{text['notInformativeNote']}</p>")
    if labelled:
        lines.append(f"<p class='muted'>{text['calibratedNote']}</p>")
    return "".join(lines)


def _null_reasons(report: ReportLike, name: str, nulls: int) -> str:
    if not nulls:
        return ""
    counted = report.null_reasons(name, REASONS_SHOWN)
    items = "".join(
        f"<li>{n:,} × <b>{_e(kind or '?')}</b>: {_e(reason[:160])}</li>"
        for kind, reason, n in counted
    )
    return f"<ul class='reasons muted'>{items}</ul>"


def _histogram(name: str, scores: list[float | None], text: Mapping[str, str]) -> str:
    values = np.array([s for s in scores if s is not None], dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return f"<div class='card'><h3>{_e(name)}</h3><p class='muted'>{text['noScore']}</p></div>"
    low, high = (
        (0.0, 1.0) if values.min() >= 0 and values.max() <= 1 else (values.min(), values.max())
    )
    counts, _edges = np.histogram(values, bins=BINS, range=(low, high if high > low else low + 1))
    width, height, gap = 300, 120, 2
    step = width / BINS
    tallest = max(int(counts.max()), 1)
    bars = "".join(
        f"<rect class='bar' x='{i * step + gap / 2:.1f}' y='{height - c / tallest * height:.1f}' "
        f"width='{step - gap:.1f}' height='{c / tallest * height:.1f}'><title>{c:,}</title></rect>"
        for i, c in enumerate(int(c) for c in counts)
    )
    label = text["histogram"].format(name=name, n=len(values))
    return (
        f"<div class='card'><h3>{_e(name)}</h3>"
        f"<p class='muted'>{_e(text['histCaption'].format(n=len(values), top=tallest))}</p>"
        f"<svg role='img' aria-label='{_e(label)}' width='{width}' height='{height + 16}' "
        f"viewBox='0 0 {width} {height + 16}'>{bars}"
        f"<line class='axis' x1='0' y1='{height}' x2='{width}' y2='{height}'/>"
        f"<text x='0' y='{height + 13}' font-size='11'>{_num(low, 2)}</text>"
        f"<text x='{width}' y='{height + 13}' font-size='11' text-anchor='end'>{_num(high, 2)}"
        "</text></svg></div>"
    )


def _percent(level: float) -> str:
    return f"{100 * level:.4g}"


def _comparison(comparison: Sequence[MetricComparison], text: Mapping[str, str]) -> str:
    """The comparison table under a header naming its correction, as ``runs compare``."""
    first = next((c for c in comparison if c.ci_level is not None), comparison[0])
    family = first.correction == "bonferroni"
    level = first.confidence
    ci = text["ciFamily"].format(level=_percent(level)) if family else text["ciEach"]
    labels = {**text, "ci": ci, "p": text["pAdjusted" if family else "pRaw"]}
    keys = ("metric", "baseMean", "candidateMean", "delta", "ci", "p", "verdict", "paired")
    lines = [f"<table><thead><tr>{_head(labels, keys)}</tr></thead><tbody>"]
    for c in comparison:
        ci_shown = _interval(c.ci95_low, c.ci95_high, c.ci_note, c.paired, text)
        lines.append(
            f"<tr><td>{_named(c.metric_name, c.scale)}</td><td class='num'>{_num(c.base_mean)}</td>"
            f"<td class='num'>{_num(c.other_mean)}</td><td class='num'>{_num(c.delta)}</td>"
            f"<td class='num'>{ci_shown}</td><td class='num'>{_num(c.p_adjusted)}</td>"
            f"<td>{_verdict(c, text)}</td><td class='num'>{c.paired:,}</td></tr>"
        )
    lines.append("</tbody></table>")
    if family:
        said = text["correction"].format(
            m=first.family, each=_percent(first.ci_level or 0.95), level=_percent(level)
        )
        if first.margin is not None:
            said += text["margin"].format(margin=f"{first.margin:g}")
        lines.append(f"<p class='muted'>{_e(said)}</p>")
    return "".join(lines)


#: a verdict's mark on its badge
_MARKS = {"better": "▲", "worse": "▼", "no_evidence": "·", "equivalent": "="}


def _verdict(c: MetricComparison, text: Mapping[str, str]) -> str:
    """The verdict as a badge; a metric without pairs has none, and its note says why."""
    if c.verdict is None:
        unpaired = next((n.values for n in c.notes if n.code == "unpaired"), None)
        said = c.note or "–"
        if unpaired is not None:
            by = text[f"by.{unpaired['by']}"]
            said = text["unpaired"].format(**{**unpaired, "by": by})
        return f"<span class='muted'>{_e(said)}</span>"
    said = text[c.verdict].format(margin=f"{c.margin:g}" if c.margin is not None else "")
    return f"<span class='badge {c.verdict}'>{_MARKS[c.verdict]} {_e(said)}</span>"


def _regressions(name: str, pairs: Sequence[RowPair], text: Mapping[str, str]) -> str:
    title = f"<h3>{_e(text['regressed'].format(name=name))}</h3>"
    if not pairs:
        return f"{title}<p class='muted'>{text['noRegression']}</p>"
    head = _head(text, ("row", "query", "base", "candidate", "delta"))
    rows = "".join(
        f"<tr><td class='num'>{p.other_index}</td><td>{_e(cut_text(p.query, TEXT_CHARS))}</td>"
        f"<td class='num'>{_num(p.base_score)}</td><td class='num'>{_num(p.other_score)}</td>"
        f"<td class='num bad'>{_num(p.delta)}</td></tr>"
        for p in pairs
    )
    return f"{title}<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _worst(name: str, records: Sequence[ResultRecord], text: Mapping[str, str]) -> str:
    cards = "".join(_row_card(r, text) for r in records)
    return f"<h3>{_e(name)}</h3>{cards or '<p class=muted>–</p>'}"


def _row_card(record: ResultRecord, text: Mapping[str, str]) -> str:
    raw = record.raw_dataset or {}
    response = raw.get("response")
    if response is None and isinstance(record.prediction, str):
        response = record.prediction  # what the app answered
    fields = [("query", record.query), ("response", response)]
    fields.append(("reference", raw.get("reference")))
    shown = "".join(
        f"<div class='label'>{text[k]}</div><div class='text'>{_e(cut_text(v, TEXT_CHARS))}</div>"
        for k, v in fields
        if v not in (None, "")
    )
    if record.score is None:
        kind = _e(record.error_kind or "?")
        reason = _e(cut_text(record.error or "", TEXT_CHARS))
        score = f"<span class='bad'>{text['null']}</span> ({kind}): {reason}"
    else:
        passing = "" if record.passing is None else (" ✓" if record.passing else " ✗")
        score = f"{_num(record.score)}{passing}"
    details = getattr(record, "details", None)  # None: not recorded (an older run)
    said = _e(cut_text(record.feedback or "", TEXT_CHARS))
    feedback = (  # the reasoning, when recorded, says the same at length
        f"<div class='label'>{text['feedback']}</div><div class='text'>{said}</div>"
        if record.feedback and not details
        else ""
    )
    return (
        f"<div class='card'><div class='label'>{text['row']} {record.row_index} · "
        f"{text['score']} {score}</div>{shown}{feedback}"
        f"{_reasoning(details, record, text)}</div>"
    )


def _reasoning(details: Any, record: ResultRecord, text: Mapping[str, str]) -> str:
    if not isinstance(details, Mapping):
        cost = record.cost or {}
        judged = bool(cost.get("requests") or cost.get("cached"))
        return f"<p class='muted'>{text['notRecorded']}</p>" if judged else ""
    out = []
    for group in details.get("groups") or []:
        kind = str(group.get("kind", ""))
        found = [i for i in group.get("items") or [] if isinstance(i, Mapping)]
        items = "".join(_item(item) for item in found[:ITEMS_SHOWN])
        if len(found) > ITEMS_SHOWN:
            more = text["moreItems"].format(n=len(found) - ITEMS_SHOWN)
            items += f"<li class='muted'>{_e(more)}</li>"
        out.append(f"<div class='label'>{_e(text.get('kind.' + kind, kind))}</div><ul>{items}</ul>")
    values = details.get("values") or {}
    if values:
        shown = ", ".join(f"{_e(k)} = {_e(_value(v))}" for k, v in values.items())
        out.append(f"<p class='muted'>{shown}</p>")
    return "".join(out)


def _item(item: Mapping[str, Any]) -> str:
    verdict = item.get("verdict")
    mark = (  # no verdict (a question): the list's own bullet is enough
        "<span class='ok'>✓</span> "
        if verdict is True
        else "<span class='bad'>✗</span> "
        if verdict is False
        else ""
    )
    reason = (
        f" <span class='muted'>{_e(cut_text(item['reason'], ITEM_CHARS))}</span>"
        if item.get("reason")
        else ""
    )
    value = (
        f" <span class='muted'>({_e(_value(item['value']))})</span>"
        if item.get("value") is not None
        else ""
    )
    return f"<li>{mark}{_e(cut_text(item.get('text', ''), ITEM_CHARS))}{value}{reason}</li>"


def _value(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def write_page(page: str, path: str | Path) -> Path:
    """Write ``page`` to ``path`` (its folder made) and return the path; ConfigError naming
    the path when it cannot be written (a folder, no permission, a full disk)."""
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"cannot write the report to {target}: it is a folder; name a file")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"cannot write the report to {target}: {reason}") from None
    return target
