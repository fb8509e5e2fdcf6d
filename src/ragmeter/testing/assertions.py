"""``assert_metrics``: evaluate rows with the metrics a set of gate rules names and assert the
rules hold, with a failure message that shows the failing rule, its numbers and the worst
rows (query, response, the judge's reason). The pytest plugin's ``ragmeter`` fixture calls it.

Evaluations are shared: the judge's replies are cached in the store (``$RAGMETER_HOME``),
an identical evaluation is done once per process, and across processes (pytest-xdist
workers) a lock file per evaluation makes the others wait and then read the cache, so no
request is sent twice."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragmeter.config import ragmeter_home
from ragmeter.errors import ConfigError
from ragmeter.reports import EvaluationReport
from ragmeter.runs.execution.repeats import (
    MAX_REPEATS,
    Disagreement,
    combine_repeats,
    disagreements,
    seeded,
)
from ragmeter.runs.gates.gate import GateResult, gate_reports
from ragmeter.runs.gates.output import failure_text
from ragmeter.runs.gates.rules import Rule, parse_rules
from ragmeter.runs.gates.sources import load_results

__all__ = ["Evaluated", "GateFailed", "assert_metrics", "evaluate_once", "metrics_of"]

_memo: dict[str, Evaluated] = {}
_memo_lock = threading.Lock()


class GateFailed(AssertionError):
    """A rule of ``assert_metrics`` failed; ``result`` holds every rule's outcome."""

    def __init__(self, result: GateResult) -> None:
        super().__init__(failure_text(result))
        self.result = result


def _rules(rules: str | Iterable[str | Rule]) -> list[Rule]:
    items = [rules] if isinstance(rules, str) else list(rules)
    return [r if isinstance(r, Rule) else parse_rules([r])[0] for r in items]


def metrics_of(rules: Iterable[Rule]) -> list[str]:
    """The metrics the rules name, in order of first mention."""
    return list(dict.fromkeys(r.metric for r in rules if r.metric is not None))


@contextlib.contextmanager
def _locked(key: str) -> Iterator[None]:
    """Hold ``$RAGMETER_HOME/locks/<key>.lock`` (POSIX advisory lock) while the block runs:
    processes evaluating the same rows with the same judge take turns."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here: the cache still saves repeated requests
        yield
        return
    folder = ragmeter_home() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{key}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _judge(options: dict[str, Any], repeats: int) -> dict[str, Any]:
    """``judge`` with ``judge_base_url``: the model id at that endpoint, as an engine; with
    ``repeats`` the judge is made an engine whatever names it (each repeat seeds it)."""
    base_url = options.pop("judge_base_url", None)
    model = options.get("judge")
    if base_url is None and (repeats == 1 or not isinstance(model, str)):
        return options
    if not isinstance(model, str):
        raise ConfigError("judge_base_url needs judge, the model id to ask there")
    from ragmeter.judge.from_config import judge_from_config

    return {**options, "judge": judge_from_config(model, base_url=base_url)}


@dataclass(frozen=True)
class Evaluated:
    """An evaluation of ``evaluate_once``: the report (the mean over the repeats when there
    are several) and the results whose repeats disagree."""

    report: EvaluationReport
    flaky: tuple[Disagreement, ...] = ()


def _evaluate(dataset: Any, metrics: list[str], options: dict[str, Any]) -> Evaluated:
    from ragmeter.runs.api import evaluate

    repeats = int(options.pop("repeats", 1) or 1)
    if not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(f"repeats must be between 1 and {MAX_REPEATS}, not {repeats}")
    options = _judge(options, repeats)
    if repeats == 1:
        return Evaluated(evaluate(dataset, ",".join(metrics), **options))
    if options.get("judge") is None:
        raise ConfigError("repeats repeats the judge's verdicts: give judge, a judge model")
    reports = [
        evaluate(dataset, ",".join(metrics), **{**options, "judge": seeded(options["judge"], r)})
        for r in range(repeats)
    ]
    return Evaluated(combine_repeats(reports), tuple(disagreements(reports)))


def evaluate_once(rows: Any, metrics: list[str], **options: Any) -> Evaluated:
    """``ragmeter.evaluate(rows, metrics, **options)`` (``repeats=N``: N times, each repeat's
    judge requests with their own seed, combined), done once per identical call in this
    process and, across processes, one at a time (the first fills the judge cache)."""
    from ragmeter.datasets import load_dataset

    dataset = load_dataset(rows)
    described = {k: v if isinstance(v, str | int | float | bool | None) else repr(v)
                 for k, v in sorted(options.items())}  # fmt: skip
    payload = json.dumps(
        [list(dataset.raws()), metrics, described, str(ragmeter_home())],
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    key = hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    with _memo_lock:
        found = _memo.get(key)
    if found is not None:
        return found
    with _locked(key):
        evaluated = _evaluate(dataset, metrics, dict(options))
    with _memo_lock:
        _memo[key] = evaluated
    return evaluated


def assert_metrics(
    rows_or_dataset: Any,
    rules: str | Iterable[str | Rule],
    *,
    baseline: str | Path | EvaluationReport | None = None,
    **options: Any,
) -> GateResult:
    """Evaluate ``rows_or_dataset`` (rows, a dataset file, a DataFrame or a ``Dataset``; a
    finished ``EvaluationReport`` is gated as it is) with the metrics the ``rules`` name,
    then judge the rules, against ``baseline`` (a stored run, a results file or a report)
    for delta rules. ``options`` go to ``ragmeter.evaluate`` (``judge``, ``embedder``...;
    ``judge_base_url`` makes ``judge`` the model id at that endpoint; ``repeats=N`` judges
    every row N times and gates the mean, the result's ``flaky`` listing the results whose
    repeats disagree). Raises
    ``GateFailed`` (an AssertionError) naming the failed rules, their numbers and worst
    rows; returns the result otherwise."""
    parsed = _rules(rules)
    if not parsed:
        raise ConfigError("assert_metrics needs at least one rule, e.g. 'faithfulness.mean >= 0.8'")
    if isinstance(rows_or_dataset, EvaluationReport):
        evaluated = Evaluated(rows_or_dataset)
    else:
        metrics = metrics_of(parsed)
        if not metrics:
            raise ConfigError(
                "the rules name no metric to evaluate: add one, e.g. 'faithfulness.mean >= 0.8'"
            )
        evaluated = evaluate_once(rows_or_dataset, metrics, **options)
    base, base_name = (None, None) if baseline is None else load_results(baseline)
    name = evaluated.report.run_id or "these rows"
    result = gate_reports(evaluated.report, parsed, base, names=(name, base_name))
    result = replace(result, flaky=evaluated.flaky)
    if not result.passed:
        raise GateFailed(result)
    return result
