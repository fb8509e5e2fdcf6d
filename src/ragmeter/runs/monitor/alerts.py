"""Alert rules, parsed from their text (never ``eval``'d), and their evaluation over a window
of a metric's recent scores.

::

    faithfulness.mean < 0.8 over 1h with n >= 50
    answer_relevancy.ci95_high < 0.7 over 1d     # even the interval's top end is low
    faithfulness.null_rate > 0.1 over 15m with n >= 20

A rule is a gate rule's condition (``METRIC.STAT OP NUMBER``, the same statistics' names:
``mean``, ``ci95_low``, ``ci95_high``, ``null_rate``), a window (``over`` a number of minutes,
hours or days: ``15m``, ``1h``, ``1d``) and the fewest values the statistic needs (``with n >=
N``; ``SMALL_SAMPLE`` when not given). ``n`` counts the scored values (for ``null_rate``: every
result, scored or null). Under that n the rule decides nothing: an open episode stays open,
none is opened.

Episodes: a rule fires once when its condition becomes true, and not again until it has been
false (resolved); ``step`` says which, the store makes it happen once across replicas."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragmeter.errors import ConfigError, clip
from ragmeter.reports.stats import SMALL_SAMPLE, bootstrap_mean_ci
from ragmeter.runs.gates.rules import OPERATORS, STATS, Rule, Stat, bound_of

__all__ = [
    "ALERT_STATS",
    "MAX_MIN_N",
    "MAX_WINDOW_SECONDS",
    "AlertRule",
    "Reading",
    "ScoreReader",
    "Step",
    "parse_alert",
    "parse_window",
    "read_window",
    "step",
]

#: the statistics an alert may bound (a gate rule's names for them)
ALERT_STATS: tuple[Stat, ...] = ("mean", "ci95_low", "ci95_high", "null_rate")
#: the longest window: 30 days
MAX_WINDOW_SECONDS = 30 * 86_400
#: the largest ``with n >=``
MAX_MIN_N = 1_000_000
_UNITS = {"m": 60, "h": 3_600, "d": 86_400}
#: (scores of ``metric`` with ``since_ns <= time < until_ns``) -> (times in ns since the
#: epoch, scores with NaN for a null)
ScoreReader = Callable[[str, int, int], tuple[np.ndarray, np.ndarray]]
Step = Literal["fire", "resolve"]

_OP = "|".join(re.escape(op) for op in OPERATORS)
#: ``metric.stat op bound over window [with n >= count]``; the metric name holds no space or
#: operator and may hold dots and ``@`` (the last dot splits it from the statistic)
_ALERT = re.compile(
    rf"^\s*(?P<metric>[^\s:<>=]+)\.(?P<stat>[a-z0-9_]+)\s*(?P<op>{_OP})\s*(?P<bound>\S+)"
    r"\s+over\s+(?P<window>\S+)(?:\s+with\s+n\s*>=\s*(?P<n>\S+))?\s*$"
)


@dataclass(frozen=True)
class AlertRule:
    """A parsed alert rule: its condition (a gate ``Rule`` on one metric), the window in
    seconds and the fewest values the statistic needs."""

    condition: Rule
    window_seconds: int
    min_n: int

    @property
    def metric(self) -> str:
        assert self.condition.metric is not None  # parse_alert requires one
        return self.condition.metric

    @property
    def window(self) -> str:
        """The window as written canonically (``1h``, ``90m``)."""
        for unit in ("d", "h", "m"):
            if self.window_seconds % _UNITS[unit] == 0 and self.window_seconds >= _UNITS[unit]:
                return f"{self.window_seconds // _UNITS[unit]}{unit}"
        return f"{self.window_seconds}s"  # pragma: no cover - windows are whole minutes

    @property
    def text(self) -> str:
        """The rule in one canonical spelling."""
        return f"{self.condition.name} over {self.window} with n >= {self.min_n}"


def _bad(text: str, why: str) -> ConfigError:
    return ConfigError(f"alert rule '{clip(text.strip(), 120)}': {why}")


def parse_window(found: str) -> int:
    """A window (``15m``, ``1h``, ``1d``) in seconds; ConfigError saying what is wrong."""
    match = re.fullmatch(r"(\d{1,6})([mhd])", found)
    if match is None:
        raise ConfigError(
            f"the window '{clip(found)}' is not a number of minutes, hours or days "
            "(write e.g. 15m, 1h, 1d)"
        )
    seconds = int(match[1]) * _UNITS[match[2]]
    if not 60 <= seconds <= MAX_WINDOW_SECONDS:
        raise ConfigError(f"the window '{found}' is outside 1m to 30d")
    return seconds


def _window(text: str, found: str) -> int:
    try:
        return parse_window(found)
    except ConfigError as exc:
        raise _bad(text, str(exc)) from None


def _count(text: str, found: str | None) -> int:
    if found is None:
        return SMALL_SAMPLE
    if not re.fullmatch(r"\d{1,7}", found) or not 1 <= int(found) <= MAX_MIN_N:
        raise _bad(text, f"'n >= {clip(found)}' needs a whole number from 1 to {MAX_MIN_N:,}")
    return int(found)


def parse_alert(text: str) -> AlertRule:
    """An alert rule from its text; ConfigError naming the rule and what is wrong with it."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("alert rule: empty; write e.g. 'faithfulness.mean < 0.8 over 1h'")
    found = _ALERT.match(text)
    if found is None:
        raise _bad(
            text,
            "not understood; write 'METRIC.STAT OP NUMBER over WINDOW [with n >= N]' (STAT: "
            f"{', '.join(ALERT_STATS)}; OP: {', '.join(OPERATORS)}; WINDOW: e.g. 15m, 1h, 1d)",
        )
    stat, op = found["stat"], found["op"]
    if stat not in ALERT_STATS:
        known = "a gate statistic alerts do not bound" if stat in STATS else "unknown statistic"
        raise _bad(text, f"{known} '{clip(stat)}'; choose {', '.join(ALERT_STATS)}")
    bound = bound_of(found["bound"])
    if bound is None:
        raise _bad(text, f"the bound '{clip(found['bound'])}' is not a number")
    if stat == "null_rate" and not 0.0 <= bound <= 1.0:
        raise _bad(text, f"null_rate is a share between 0 and 1, not {bound:g}")
    head = text.strip().split(" over ", 1)[0].strip()
    condition = Rule(text=head, metric=found["metric"], stat=stat, op=op, bound=bound)  # type: ignore[arg-type]
    return AlertRule(condition, _window(text, found["window"]), _count(text, found["n"]))


@dataclass(frozen=True)
class Reading:
    """A rule's statistic over its window: the value (None with no value to compute it
    from), ``n`` the values it is over, and whether the condition holds (None: fewer than
    the rule's n, which decides nothing)."""

    value: float | None
    n: int
    holds: bool | None


def read_window(rule: AlertRule, scores: np.ndarray) -> Reading:
    """The rule's statistic over ``scores`` (NaN for a null) and whether it holds."""
    values = np.asarray(scores, dtype=np.float64)
    scored = values[~np.isnan(values)]
    stat = rule.condition.stat
    if stat == "null_rate":
        n = len(values)
        value = float(n - len(scored)) / n if n else None
    else:
        n = len(scored)
        if n == 0:
            value = None
        elif stat == "mean":
            value = float(scored.mean())
        else:
            low, high = bootstrap_mean_ci(scored)
            value = low if stat == "ci95_low" else high
    if value is None or n < rule.min_n:
        return Reading(value, n, None)
    return Reading(value, n, rule.condition.holds(value))


def step(open_episode: bool, holds: bool | None) -> Step | None:
    """What a reading does to a rule's episode: ``fire`` when the condition holds and none
    is open, ``resolve`` when it no longer holds and one is open, else nothing (too few
    values decide nothing)."""
    if holds is None:
        return None
    if holds and not open_episode:
        return "fire"
    if not holds and open_episode:
        return "resolve"
    return None
