"""Judge cards beside a gate's scores: for each metric of a stored run, the newest card of
the run's judge model on it (``judge card: κ 0.41 [0.33, 0.49], n 817, ragtruth``), and the
``--require-card METRIC:STAT>=VALUE`` rules checked against them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.markup import escape

from ragmeter.cli._common import console
from ragmeter.reports import EvaluationReport
from ragmeter.runs.cards import (
    CardRequirement,
    CardStore,
    StoredCard,
    check_requirement,
    headline,
    judge_model_of,
)
from ragmeter.store.db import Store

__all__ = ["RunCards", "card_failures", "print_cards", "run_cards"]


@dataclass(frozen=True)
class RunCards:
    """The judge model a run names (None: a results file, or no judge) and the newest card
    of that model on each of its metrics that has one."""

    judge_model: str | None
    cards: dict[str, StoredCard] = field(default_factory=dict)


def run_cards(report: EvaluationReport, store: Store | None = None) -> RunCards:
    """The cards of a stored run's judge on its metrics (none for a results file)."""
    if report.run_id is None:
        return RunCards(None)
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.runs.storage.store import RunStore

    store = store or KnowledgeBase().store
    model = judge_model_of(RunStore(store).get(report.run_id).lineage)
    return RunCards(model, CardStore(store).of_metrics(model, list(report.metric_names)))


def print_cards(found: RunCards) -> None:
    """One line per metric with a card of the run's judge."""
    for metric, stored in found.cards.items():
        console.print(
            f"{escape(metric)} · {escape(headline(stored.card))} (card {stored.id}, judge "
            f"{escape(stored.judge_model)})",
            highlight=False,
        )


def card_failures(rules: Sequence[CardRequirement], found: RunCards) -> list[str]:
    """Why each ``--require-card`` rule that fails does (an empty list: all pass)."""
    failures = []
    for rule in rules:
        stored = found.cards.get(rule.metric)
        why = check_requirement(rule, None if stored is None else stored.card, found.judge_model)
        if why is not None:
            failures.append(why)
    return failures
