"""A card's agreement section from the judge's and the people's values of a suite's rows,
and the gate's ``--require-card METRIC:STAT>=VALUE`` rules."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.datasets.judge_suites import Suite
from ragmeter.errors import ConfigError
from ragmeter.reports.agreement import judge_agreement
from ragmeter.runs.storage.cards import STATISTICS, card_statistic

__all__ = [
    "CardRequirement",
    "agreement_section",
    "check_requirement",
    "parse_requirement",
]

_RULE = re.compile(r"^\s*([\w@.\-]+)\s*:\s*(\w+)\s*(>=|>|<=|<)\s*([-+0-9.eE]+)\s*$")


def _agreement(
    suite: Suite, judge: Sequence[float], human: Sequence[float], threshold: float | None
) -> dict[str, Any]:
    if suite.kind == "ordinal":
        found = judge_agreement(judge, human, kind="ordinal", categories=suite.categories)
    else:
        found = judge_agreement(judge, human, kind="binary", threshold=threshold)
    return found.as_dict()


def agreement_section(
    suite: Suite, judge: Sequence[float | None], threshold: float | None
) -> dict[str, Any]:
    """Agreement over all rows, per language and per each group of the suite (task,
    model), and for graded suites per binarisation (``binary``) and within one grade."""
    values = [math.nan if v is None else float(v) for v in judge]
    human = [item.human for item in suite.items]
    section: dict[str, Any] = {"all": _agreement(suite, values, human, threshold)}
    keys = {"language": [item.language or "unknown" for item in suite.items]}
    for name in sorted({k for item in suite.items for k in item.groups}):
        keys[name] = [item.groups.get(name, "") for item in suite.items]
    for key, labels in keys.items():
        section[key] = {
            label: _agreement(
                suite,
                [v for v, lab in zip(values, labels, strict=True) if lab == label],
                [h for h, lab in zip(human, labels, strict=True) if lab == label],
                threshold,
            )
            for label in sorted(set(labels))
        }
    if suite.kind == "ordinal":
        section["binary"] = {
            f">={cut:g}": judge_agreement(values, human, kind="binary", threshold=cut).as_dict()
            for cut in suite.thresholds
        }
        pairs = [(v, h) for v, h in zip(values, human, strict=True) if not math.isnan(v)]
        near = sum(abs(v - h) <= 1 for v, h in pairs)
        section["within_one"] = {"value": near / len(pairs) if pairs else None, "n": len(pairs)}
    return section


@dataclass(frozen=True)
class CardRequirement:
    """``faithfulness:kappa>=0.6``: the newest card of the run's judge on ``metric`` must
    have ``statistic`` ``op`` ``value``."""

    text: str
    metric: str
    statistic: str
    op: str
    value: float


def parse_requirement(text: str) -> CardRequirement:
    """A ``METRIC:STATISTIC>=VALUE`` rule; ConfigError naming what is wrong."""
    found = _RULE.match(text)
    if found is None:
        raise ConfigError(
            f"--require-card {text!r}: expected METRIC:STATISTIC>=VALUE, e.g. "
            "faithfulness:kappa>=0.6"
        )
    metric, statistic, op, number = found.groups()
    if statistic not in STATISTICS:
        raise ConfigError(
            f"--require-card {text!r}: unknown statistic {statistic!r} (one of "
            f"{', '.join(STATISTICS)})"
        )
    try:
        value = float(number)
    except ValueError:
        raise ConfigError(f"--require-card {text!r}: {number!r} is not a number") from None
    return CardRequirement(text.strip(), metric, statistic, op, value)


def check_requirement(
    rule: CardRequirement, card: dict[str, Any] | None, judge_model: str | None
) -> str | None:
    """None when ``card`` meets ``rule``, else why not (no card, no value, below)."""
    who = f"judge {judge_model!r}" if judge_model else "the run's judge"
    if judge_model is None:
        return f"{rule.text}: the run names no judge model, so no judge card applies"
    if card is None:
        return (
            f"{rule.text}: no judge card of {who} on {rule.metric} (make one: ragmeter judge "
            f"card --judge-model {judge_model} --suite NAME --metric {rule.metric})"
        )
    stat = card_statistic(card, rule.statistic)
    value = None if stat is None else stat.get("value")
    if value is None:
        return f"{rule.text}: the card of {who} has no {rule.statistic} value"
    ok = {
        ">=": value >= rule.value,
        ">": value > rule.value,
        "<=": value <= rule.value,
        "<": value < rule.value,
    }[rule.op]
    if ok:
        return None
    return f"{rule.text}: {rule.statistic} is {value:.3f} on the newest card of {who}"
