"""Making a judge card: the judge's metric over a suite's rows through the normal evaluation
engine (cache, limits, null-with-reason results), then its agreement with the people's
labels, its cost (the run's usage) and latency. A suite whose judge labels come in a file
(TREC RAG's UMBRELA grades) runs no judge: its card says so."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragmeter.datasets.judge_suites import Suite, load_suite
from ragmeter.errors import ConfigError, JudgeError
from ragmeter.judge.tasks import detect_language
from ragmeter.runs.cards.card import agreement_section
from ragmeter.runs.planning.config import ROWS_PER_REQUEST, parse_config

__all__ = [
    "CARD_VERSION",
    "CardRequest",
    "CardSuite",
    "card_suite",
    "make_card",
    "suite_sample",
]

#: the layout of a card's JSON
CARD_VERSION = 1
#: null results whose reasons a card keeps
_REASONS = 5


@dataclass(frozen=True)
class CardRequest:
    """What a card is made of: the judge (model, endpoint), the suite (a name or a labelled
    file), the metric (default: the suite's), at most ``limit`` rows, and the judge score
    from which a row passes (``threshold``) for suites labelled pass/fail."""

    judge_model: str
    suite: str
    suites_dir: Path | None = None
    metric: str | None = None
    limit: int | None = None
    threshold: float = 0.5
    judge_base_url: str | None = None
    judge_api_key_env: str | None = None
    judge_timeout: float | None = None
    judge_prompt: str | None = None
    max_concurrency: int = 16
    cache: bool = True


def suite_sample(suite: Suite, limit: int | None) -> Suite:
    """At most ``limit`` items spread evenly over the suite (every task and model keeps its
    share), in the suite's order; the suite itself without a limit."""
    if limit is None or limit >= len(suite.items):
        return suite
    step = len(suite.items) / limit
    items = [suite.items[int(i * step)] for i in range(limit)]
    return replace(suite, items=items)


def _languages(suite: Suite) -> Suite:
    """Items without a language get the one their text is written in."""
    items = [
        item
        if item.language
        else replace(
            item, language=detect_language(item.row.get("query"), item.row.get("response"))
        )
        for item in suite.items
    ]
    return replace(suite, items=items)


def _config(request: CardRequest, metric: str) -> Any:
    judge = {
        "model": request.judge_model,
        "base_url": request.judge_base_url,
        "api_key_env": request.judge_api_key_env,
        "timeout": request.judge_timeout,
        "cache": request.cache,
        "max_concurrency": request.max_concurrency,
    }
    values = {
        "metrics": (metric,),
        "judge": judge,
        "judge_prompt": request.judge_prompt,
        "concurrency": request.max_concurrency * ROWS_PER_REQUEST,
    }
    return parse_config(values, {"judge.model": "--judge-model", "metrics": "--metric"})


async def _judged(
    request: CardRequest, suite: Suite, metric: str, on_progress: Callable[[int], None] | None
) -> tuple[list[float | None], dict[str, Any], dict[str, Any]]:
    """The judge's scores of the suite's rows, the judge's lineage, and the run's facts."""
    from ragmeter.runs.execution.executor import Progress, execute_plan
    from ragmeter.runs.execution.sinks import MemorySink
    from ragmeter.runs.planning.lineage import judge_lineage
    from ragmeter.runs.planning.plan import build_plan

    rows = [item.row for item in suite.items]
    plan = build_plan(_config(request, metric), rows, source=f"suite {suite.name}", judge_hint="")
    judge = judge_lineage(plan) or {}
    sink, started = MemorySink(), time.perf_counter()
    try:
        await execute_plan(plan, sink, progress=Progress(None, on_progress))
    finally:  # the judge's connections belong to this event loop
        await plan.aclose()
    report = sink.report(plan.rows, plan.metrics, time.perf_counter() - started, None)
    scores = report.scores(metric)
    reasons = [
        {"kind": kind, "reason": reason, "count": count}
        for kind, reason, count in report.null_reasons(metric, _REASONS)
    ]
    if scores and all(score is None for score in scores):
        reason = reasons[0]["reason"] if reasons else "no reason"
        raise JudgeError(
            f"no card: every one of the {len(scores)} {metric} results is null (e.g. {reason})"
        )
    usage = dict(report.usage or {})
    facts = {
        "nulls": {"n": sum(s is None for s in scores), "reasons": reasons},
        "cost": usage,
        "latency": {
            "seconds": round(report.seconds, 3),
            "per_row_ms": round(1000 * report.seconds / max(1, len(scores)), 1),
        },
    }
    return scores, judge, facts


@dataclass(frozen=True)
class CardSuite:
    """The suite a card is made over: all of it, and the rows judged (``--limit``)."""

    full: Suite
    judged: Suite


def card_suite(request: CardRequest) -> CardSuite:
    """The suite ``request`` names, read (a bad file or folder fails here, before a judge
    is asked), and the rows to judge."""
    full = load_suite(request.suite, metric=request.metric, folder=request.suites_dir)
    if full.judge_from_file and request.metric not in (None, full.metric):
        raise ConfigError(
            f"suite {full.name} holds {full.metric} labels from a file (no judge is run): "
            f"leave out --metric {request.metric}"
        )
    return CardSuite(full, _languages(suite_sample(full, request.limit)))


async def make_card(
    request: CardRequest,
    read: CardSuite | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The card of ``request`` (over ``read``, default ``card_suite(request)``) as JSON; not
    stored: ``CardStore.put`` keeps it."""
    read = read or card_suite(request)
    full, suite = read.full, read.judged
    metric = request.metric or suite.metric
    started = time.perf_counter()
    if suite.judge_from_file:
        scores: list[float | None] = [item.judge for item in suite.items]
        judge: dict[str, Any] = {"model": request.judge_model, "prompt": None}
        seconds = time.perf_counter() - started
        facts: dict[str, Any] = {
            "nulls": {"n": 0, "reasons": []},
            "cost": {},
            "latency": {"seconds": round(seconds, 3), "per_row_ms": None},
        }
    else:
        scores, judge, facts = await _judged(request, suite, metric, on_progress)
    threshold = None if suite.kind == "ordinal" else request.threshold
    return {
        "version": CARD_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "judge": {
            "model": request.judge_model,
            "base_url": judge.get("base_url"),
            "metric": metric,
            "prompt": judge.get("prompt"),
            "threshold": threshold,
            "run": "labels from file, no judge run" if suite.judge_from_file else "judged",
            "scripted": bool(facts["cost"].get("scripted")),
        },
        "suite": {
            "name": suite.name,
            "content_hash": suite.content_hash,
            "source": suite.source,
            "kind": suite.kind,
            "rows": len(suite.items),
            "rows_in_suite": len(full.items),
            "judge_from_file": suite.judge_from_file,
        },
        "agreement": agreement_section(suite, scores, threshold),
        **facts,
    }
