"""A gate's result written out: JUnit XML (each rule a test case, a failed rule's rows in its
failure), a markdown summary for a pull request (the rules, then the rows that regressed
most) and plain text (an assertion's message)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from ragmeter.errors import ConfigError
from ragmeter.runs.gates.gate import GateResult, GateRow, RuleOutcome

__all__ = ["failure_text", "flaky_lines", "junit_xml", "markdown", "value_text", "write_text"]


#: characters XML 1.0 cannot hold (a row's text may carry them): written as U+FFFD
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def value_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _score(value: float | None) -> str:
    return "null" if value is None else f"{value:.4g}"


def _row_line(row: GateRow, metric: bool = False) -> str:
    """One row in one line: place (and ``metric``, for a rule over every metric), scores,
    query, response and reason."""
    scores = f"score {_score(row.score)}"
    if row.baseline_score is not None:
        delta = f"{row.delta:+.4g}" if row.delta is not None else "n/a"
        scores = f"baseline {_score(row.baseline_score)} -> {_score(row.score)} ({delta})"
    place = f"row {row.row_index} {row.metric_name}" if metric else f"row {row.row_index}"
    parts = [f"{place}: {scores}", f"query: {row.query!r}"]
    if row.response is not None:
        parts.append(f"response: {row.response!r}")
    if row.reason:
        parts.append(f"reason: {row.reason}")
    return "; ".join(parts)


def _heading(result: GateResult) -> str:
    failed = len(result.failed)
    verdict = "passed" if result.passed else f"failed ({failed} of {len(result.outcomes)} rules)"
    against = f" against baseline {result.baseline}" if result.baseline else ""
    return f"ragmeter gate {verdict}: candidate {result.candidate}{against}"


def _scores(values: tuple[float | None, ...]) -> str:
    return ", ".join(_score(v) for v in values)


def flaky_lines(result: GateResult, rows: int = 10) -> list[str]:
    """The results whose repeated judgements disagree, a line each (``rows`` at most)."""
    if not result.flaky:
        return []
    head = f"{len(result.flaky)} result(s) disagree between repeats (the scores gated are means):"
    return [head] + [
        f"    row {f.row_index} {f.metric_name} ({_scores(f.scores)}): {f.query!r}"
        for f in result.flaky[:rows]
    ]


def failure_text(result: GateResult, rows: int = 5) -> str:
    """The failed rules with their numbers and worst rows, as an assertion's message."""
    lines = [_heading(result)]
    for outcome in result.failed:
        lines.append(
            f"FAILED {outcome.rule.name}: value {value_text(outcome.value)} "
            f"(bound {outcome.rule.bound:g}); {outcome.detail}"
        )
        every = outcome.rule.metric is None
        lines.extend(f"    {_row_line(row, every)}" for row in outcome.rows[:rows])
    for outcome in result.outcomes:
        if outcome.passed:
            lines.append(f"passed {outcome.rule.name}: value {value_text(outcome.value)}")
    return "\n".join(lines + flaky_lines(result, rows))


def _case(suite: ET.Element, outcome: RuleOutcome) -> None:
    case = ET.SubElement(suite, "testcase", classname="ragmeter.gate", name=outcome.rule.name)
    ET.SubElement(case, "system-out").text = _xml(
        f"value {value_text(outcome.value)} {outcome.rule.op} bound {outcome.rule.bound:g}: "
        f"{outcome.verdict}; {outcome.detail}"
    )
    if not outcome.passed:
        failure = ET.SubElement(
            case,
            "failure",
            message=f"{outcome.rule.name}: value {value_text(outcome.value)}",
            type="GateRuleFailed",
        )
        every = outcome.rule.metric is None
        lines = [outcome.detail, *(_row_line(r, every) for r in outcome.rows)]
        failure.text = _xml("\n".join(lines))


def junit_xml(result: GateResult) -> str:
    """The result as JUnit XML: one test suite, each rule a test case; a failed rule's
    failure holds its detail and its rows, one per line."""
    root = ET.Element("testsuites")
    suite = ET.SubElement(
        root,
        "testsuite",
        name="ragmeter gate",
        tests=str(len(result.outcomes)),
        failures=str(len(result.failed)),
        errors="0",
        skipped="0",
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (("candidate", result.candidate), ("baseline", result.baseline)):
        if value:
            ET.SubElement(properties, "property", name=name, value=_xml(value))
    for outcome in result.outcomes:
        _case(suite, outcome)
    if result.flaky:
        ET.SubElement(suite, "system-out").text = _xml("\n".join(flaky_lines(result, rows=100)))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _cell(text: object, limit: int = 160) -> str:
    """Text for a markdown table cell: one line, pipes escaped, cut to ``limit`` characters."""
    value = " ".join(str(text).split())
    value = value if len(value) <= limit else value[: limit - 1] + "…"
    return value.replace("|", "\\|")


def _text(text: object) -> str:
    """A row's text for a cell: cut, control characters replaced and HTML's angle brackets
    escaped, so that it stays text on the pull request whatever it holds."""
    return _xml(_cell(text)).replace("<", "&lt;").replace(">", "&gt;")


def _table(head: Iterable[str], rows: Iterable[Iterable[object]]) -> list[str]:
    head = list(head)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines.extend("| " + " | ".join(map(str, row)) + " |" for row in rows)
    return lines


def _rows_section(outcome: RuleOutcome, rows: int) -> list[str]:
    compared = outcome.rule.needs_baseline
    title = "rows that regressed most" if compared else "rows behind it"
    lines = ["", f"### `{outcome.rule.name}`: {title}", ""]
    if not outcome.rows:
        return [*lines, "No row to show."]
    if compared:
        head = ["row", "query", "response", "baseline", "candidate", "delta", "judge's reason"]
        body = [
            [r.row_index, _text(r.query), _text(r.response or ""), _score(r.baseline_score),
             _score(r.score), f"{r.delta:+.4g}" if r.delta is not None else "",
             _text(r.reason or "")]
            for r in outcome.rows[:rows]
        ]  # fmt: skip
    else:
        head = ["row", "metric", "query", "response", "score", "judge's reason"]
        body = [
            [r.row_index, r.metric_name, _text(r.query), _text(r.response or ""),
             _score(r.score), _text(r.reason or "")]
            for r in outcome.rows[:rows]
        ]  # fmt: skip
    return lines + _table(head, body)


def dataset_rows_text(result: GateResult) -> str | None:
    """What changed in the rows when the runs evaluated two versions of a dataset."""
    diff = result.dataset_rows
    if diff is None:
        return None
    by = "row id" if diff.paired_by == "id" else "query text"
    return (
        f"The baseline and the candidate evaluated different versions of the dataset: "
        f"{diff.added} rows added, {diff.removed} removed, {diff.changed} changed, "
        f"{diff.unchanged} unchanged (paired by {by})."
    )


def markdown(result: GateResult, rows: int = 10) -> str:
    """A summary to post on a pull request: verdict, rules table, unpaired rows and, per
    failed rule, its worst rows with the judge's reason."""
    mark = "✅" if result.passed else "❌"
    lines = [f"## {mark} {_heading(result)}", ""]
    versions = dataset_rows_text(result)
    if versions is not None:
        lines += [versions, ""]
    if result.paired_by is not None:
        lines.append(f"Rows pair by {'row id' if result.paired_by == 'id' else 'query text'}.")
        unpaired = {m: n for m, n in result.unpaired.items() if any(n)}
        for metric, (base, cand) in unpaired.items():
            lines.append(f"- {metric}: {base} baseline and {cand} candidate rows found no pair.")
        lines.append("")
    lines += _table(
        ["rule", "value", "bound", "verdict", "detail"],
        [
            [f"`{o.rule.name}`", value_text(o.value), f"{o.rule.op} {o.rule.bound:g}",
             "pass" if o.passed else "**FAIL**", _cell(o.detail, 1000)]
            for o in result.outcomes
        ],
    )  # fmt: skip
    for outcome in result.failed:
        lines += _rows_section(outcome, rows)
    if result.flaky:
        lines += ["", f"### Results whose repeats disagree ({len(result.flaky)})", ""]
        lines += _table(
            ["row", "metric", "scores per repeat", "query"],
            [
                [f.row_index, f.metric_name, _scores(f.scores), _text(f.query)]
                for f in result.flaky[:rows]
            ],
        )
    return "\n".join(lines) + "\n"


def write_text(path: Path, text: str, option: str) -> Path:
    """``text`` written to ``path`` (folders made); ConfigError naming ``option`` when it
    cannot be written."""
    if path.is_dir():
        raise ConfigError(f"{option} {path} is a folder: name the file to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot write it ({exc.strerror or exc})") from None
    return path
