"""Gate rules, parsed from their text (never ``eval``'d): absolute rules on one run's scores
and non-inferiority rules against a baseline run.

::

    faithfulness.mean >= 0.8          # the mean of the scored rows
    mrr.ci95_low >= 0.6               # the low end of the mean's 95% bootstrap CI
    answer_correctness.pass_rate >= 0.9   # share of rows whose ``passing`` is true
    null_rate <= 0.02                 # share of null results, all metrics (or metric.null_rate)
    faithfulness.calibrated_mean >= 0.8   # the mean corrected by human labels (PPI++);
                                      # calibrated_low / calibrated_high: its 95% interval
    faithfulness: delta >= -0.02      # paired difference candidate - baseline, judged on its
                                      # 95% CI bound: the low end for >= and >, the high end
                                      # for <= and <; never on the point estimate
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal, get_args

from ragmeter.errors import ConfigError, clip

__all__ = [
    "CALIBRATED",
    "OPERATORS",
    "STATS",
    "Op",
    "Rule",
    "Stat",
    "bound_of",
    "calibrated_rules",
    "parse_rule",
    "parse_rules",
]

Stat = Literal[
    "mean",
    "ci95_low",
    "ci95_high",
    "pass_rate",
    "null_rate",
    "delta",
    "calibrated_mean",
    "calibrated_low",
    "calibrated_high",
]
Op = Literal[">=", ">", "<=", "<"]
#: the statistics a rule may bound (``delta`` needs a baseline)
STATS: tuple[Stat, ...] = get_args(Stat)
#: what ``--calibrated`` bounds instead of the judge's own mean and its interval
CALIBRATED: dict[Stat, Stat] = {
    "mean": "calibrated_mean",
    "ci95_low": "calibrated_low",
    "ci95_high": "calibrated_high",
}
OPERATORS: tuple[Op, ...] = (">=", "<=", ">", "<")

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_OP = r">=|<=|>|<"
#: ``metric.stat op bound`` (``metric.`` optional for null_rate); metric names hold no space,
#: colon or operator, and may hold dots and ``@`` (``ndcg@10.mean``: the last dot splits)
_DOTTED = re.compile(
    rf"^\s*(?:(?P<metric>[^\s:<>=]+)\.)?(?P<stat>[a-z0-9_]+)\s*(?P<op>{_OP})\s*(?P<bound>\S+)\s*$"
)
#: ``metric: delta op bound``
_COLON = re.compile(
    rf"^\s*(?P<metric>[^\s:<>=]+)\s*:\s*(?P<stat>[a-z0-9_]+)\s*(?P<op>{_OP})\s*(?P<bound>\S+)\s*$"
)


@dataclass(frozen=True)
class Rule:
    """One parsed rule: the statistic of ``metric`` (None: every metric, for null_rate)
    compared with ``bound`` by ``op``. ``text`` is the rule as written."""

    text: str
    metric: str | None
    stat: Stat
    op: Op
    bound: float

    @property
    def needs_baseline(self) -> bool:
        return self.stat == "delta"

    @property
    def name(self) -> str:
        """The rule in one canonical spelling (tables, JUnit test names)."""
        if self.stat == "delta":
            return f"{self.metric}: delta {self.op} {self.bound:g}"
        head = f"{self.metric}.{self.stat}" if self.metric else self.stat
        return f"{head} {self.op} {self.bound:g}"

    def holds(self, value: float) -> bool:
        """``value op bound``."""
        if self.op == ">=":
            return value >= self.bound
        if self.op == ">":
            return value > self.bound
        if self.op == "<=":
            return value <= self.bound
        return value < self.bound


def bound_of(text: str) -> float | None:
    """A rule's bound written as a plain decimal number (``0.8``, ``-2``, ``1e-3``), or None
    (not such a number, or not finite)."""
    if not re.fullmatch(_NUMBER, text):
        return None
    bound = float(text)
    return bound if math.isfinite(bound) else None


def _bad(text: str, why: str) -> ConfigError:
    return ConfigError(f"gate rule '{clip(text.strip(), 80)}': {why}")


def parse_rule(text: str) -> Rule:
    """A rule from its text; ConfigError naming the rule and what is wrong with it."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"gate rule {text!r}: empty; write e.g. 'faithfulness.mean >= 0.8'")
    found = _COLON.match(text) or _DOTTED.match(text)
    if found is None:
        raise _bad(
            text,
            "not understood; write 'METRIC.STAT OP NUMBER' (STAT: mean, ci95_low, ci95_high, "
            "pass_rate, null_rate, calibrated_mean, calibrated_low, calibrated_high; OP: >=, "
            ">, <=, <) or 'METRIC: delta >= NUMBER' against a baseline",
        )
    stat, op, metric = found["stat"], found["op"], found["metric"]
    if stat not in STATS:
        raise _bad(text, f"unknown statistic '{clip(stat)}'; choose {', '.join(STATS)}")
    bound = bound_of(found["bound"])
    if bound is None:
        raise _bad(text, f"the bound '{clip(found['bound'])}' is not a number")
    if metric is None and stat != "null_rate":
        raise _bad(text, f"name the metric: 'METRIC.{stat} {op} {found['bound']}'")
    if stat in ("pass_rate", "null_rate") and not 0.0 <= bound <= 1.0:
        raise _bad(text, f"{stat} is a share between 0 and 1, not {bound:g}")
    return Rule(text=text.strip(), metric=metric, stat=stat, op=op, bound=bound)  # type: ignore[arg-type]


def parse_rules(texts: Iterable[str]) -> list[Rule]:
    """Each rule parsed, in order; duplicates (the same canonical rule) kept once."""
    rules: dict[str, Rule] = {}
    for text in texts:
        rule = parse_rule(text)
        rules.setdefault(rule.name, rule)
    return list(rules.values())


def calibrated_rules(rules: Iterable[Rule]) -> list[Rule]:
    """``rules`` with each bound on a metric's mean or its interval moved to the mean
    corrected by human labels (``--calibrated``); the other rules as they are."""
    out: list[Rule] = []
    for rule in rules:
        stat = CALIBRATED.get(rule.stat)
        out.append(rule if stat is None else replace(rule, stat=stat))
    return out
