"""Tool call metrics: accuracy (ragmeter's partial credit, or RAGAS 0.4.3's exactly), F1
with precision and recall, argument accuracy and trajectory match. ``E`` is a row's expected
calls (``reference_tool_calls``), ``A`` its actual calls (from ``messages``), in order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, ClassVar, Literal

import numpy as np

from ragmeter.datasets.agent import ToolCall
from ragmeter.errors import ErrorKind
from ragmeter.metrics.agent._calls import (
    Pair,
    align_ordered,
    align_unordered,
    keys_of,
    too_many_pairs,
)
from ragmeter.metrics.agent._typed import distinct_counts
from ragmeter.metrics.agent.base import Outcome, ToolCallMetric, lacking_calls
from ragmeter.metrics.registry import register_metric

__all__ = [
    "TRAJECTORY_MODES",
    "ArgumentAccuracyMetric",
    "ToolCallAccuracyMetric",
    "ToolCallF1Metric",
    "ToolCallPrecisionMetric",
    "ToolCallRecallMetric",
    "TrajectoryMatchMetric",
    "ragas_tool_call_accuracy",
    "set_counts",
]

AccuracyMode = Literal["ragmeter", "ragas"]
TrajectoryMode = Literal["strict", "unordered", "subset", "superset"]
TRAJECTORY_MODES: tuple[str, ...] = ("strict", "unordered", "subset", "superset")


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


# -- accuracy --------------------------------------------------------------------------------

_name = itemgetter(0)  # a call's name


def _ragas_sort_key(call: ToolCall) -> tuple[str, ...]:
    """RAGAS's sort key: the name, then each argument name and its value as ``str``."""
    args = call.arguments
    if type(args) is not dict and not isinstance(args, Mapping):
        return (call.name, str(args))
    key = [call.name]
    for name in sorted(args):
        key += [name, str(args[name])]
    return tuple(key)


def _ragas_arg_score(pred: Any, ref: Any) -> float:
    """RAGAS's argument score: the share of the expected argument names whose values are
    equal as ``str`` (so ``1`` is not ``1.0``); 1 when neither has arguments, 0 when only
    the actual call has."""
    if not (type(pred) is dict or isinstance(pred, Mapping)) or not (
        type(ref) is dict or isinstance(ref, Mapping)
    ):
        return 1.0 if str(pred) == str(ref) else 0.0
    if not ref and not pred:
        return 1.0
    if not ref:
        return 0.0
    hits = sum(1.0 for name in ref if name in pred and str(pred[name]) == str(ref[name]))
    return hits / len(ref)


def ragas_tool_call_accuracy(
    actual: Sequence[ToolCall], expected: Sequence[ToolCall], strict_order: bool = True
) -> float:
    """RAGAS 0.4.3's ``ToolCallAccuracy``, step for step::

        both empty -> 1;  either empty -> 0
        (strict_order=False: both lists sorted by name, then arguments as text)
        aligned = names(A) == names(E)        (as multisets when not strict_order)
        score = aligned * sum(arg_score(a_i, e_i) for i where names match) / |E|

    where ``arg_score`` compares argument values as ``str``. Any difference in the number of
    calls makes ``aligned`` 0: RAGAS's coverage penalty can never apply."""
    if not actual or not expected:
        return 1.0 if not actual and not expected else 0.0
    if len(actual) != len(expected):
        return 0.0  # the names cannot align
    pairs: Iterable[tuple[ToolCall, ToolCall]]
    if strict_order:
        if list(map(_name, actual)) != list(map(_name, expected)):
            return 0.0
        pairs = zip(expected, actual, strict=True)
    else:
        if sorted(map(_name, actual)) != sorted(map(_name, expected)):
            return 0.0
        ordered = sorted(actual, key=_ragas_sort_key)
        pairs = zip(sorted(expected, key=_ragas_sort_key), ordered, strict=True)
    # the names align pair by pair: RAGAS's sum over the pairs (in its order), over |E|
    total = 0.0
    for r, p in pairs:
        total += _ragas_arg_score(p.arguments, r.arguments)
    return total / len(expected)


def _pairs_feedback(pairs: Sequence[Pair], expected: int, actual: int) -> str:
    partial = sum(1 for _, _, w in pairs if w < 1.0)
    parts = [f"{len(pairs)} of {expected} expected calls made"]
    if actual > len(pairs):
        parts.append(f"{actual - len(pairs)} extra")
    if partial:
        parts.append(f"{partial} with wrong arguments")
    return ", ".join(parts)


@register_metric("tool_call_accuracy", aliases=("ToolCallAccuracy",))
class ToolCallAccuracyMetric(ToolCallMetric):
    """Tool call accuracy: expected calls made with the right arguments, partial credit for
    extra or missing calls.

    Default (``mode="ragmeter"``)::

        S = sum of argument_accuracy(e, a) over the aligned pairs (e, a)
        score = S / max(|E|, |A|)            (1 when both are empty)

    so an extra or a missing call costs one call's share, never the whole score.
    ``argument_accuracy`` is the share of argument names (over both calls) whose values are
    equal as typed JSON. Pairs join same-named calls: in order (a weighted longest common
    subsequence) with ``strict_order``, else in any order (equal calls first, then by
    argument accuracy).

    ``mode="ragas"`` is RAGAS 0.4.3's ToolCallAccuracy exactly (see
    ``ragas_tool_call_accuracy``): 0 whenever the number of calls differs.
    """

    def __init__(self, mode: AccuracyMode = "ragmeter", strict_order: bool = True) -> None:
        if mode not in ("ragmeter", "ragas"):
            raise ValueError(f"mode must be ragmeter or ragas, got {mode!r}")
        self.mode: AccuracyMode = mode
        self.strict_order = _check_bool("strict_order", strict_order)

    def _score_rows(
        self,
        actual: Sequence[Sequence[ToolCall] | None],
        expected: Sequence[Sequence[ToolCall] | None],
    ) -> tuple[np.ndarray, dict[int, tuple[str, ErrorKind]], dict[int, str]]:
        if self.mode != "ragas":
            return super()._score_rows(actual, expected)
        strict, nan = self.strict_order, float("nan")
        scores = np.fromiter(
            (
                nan if a is None or e is None else ragas_tool_call_accuracy(a, e, strict)
                for a, e in zip(actual, expected, strict=True)
            ),
            dtype=float,
            count=len(actual),
        )
        return scores, lacking_calls(actual, expected), {}

    def score_calls(self, actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> Outcome:
        if self.mode == "ragas":
            return ragas_tool_call_accuracy(actual, expected, self.strict_order), None
        if not actual and not expected:
            return 1.0, None
        if reason := too_many_pairs(expected, actual):
            return None, reason
        align = align_ordered if self.strict_order else align_unordered
        pairs = align(expected, actual)
        score = sum(w for _, _, w in pairs) / max(len(expected), len(actual))
        return score, None if score == 1.0 else _pairs_feedback(pairs, len(expected), len(actual))


# -- F1, precision, recall -------------------------------------------------------------------


def set_counts(actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> tuple[int, int, int]:
    """``(tp, fp, fn)`` of the distinct calls (name and typed arguments), as RAGAS counts
    them: a call made twice counts once."""
    done = set(keys_of(actual))
    wanted = set(keys_of(expected))
    tp = len(done & wanted)
    return tp, len(done) - tp, len(wanted) - tp


def _f1_parts(actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> tuple[float, ...]:
    """(precision, recall, f1) of the distinct calls; all 1 when both are empty."""
    if not actual and not expected:
        return 1.0, 1.0, 1.0
    tp, fp, fn = set_counts(actual, expected)
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


@register_metric("tool_call_f1", aliases=("ToolCallF1",))
class ToolCallF1Metric(ToolCallMetric):
    """Tool call F1 over the distinct calls, a call matching only with the same name and
    arguments equal as typed JSON.

    Typed JSON: ``1 == 1.0``, key order irrelevant, nested values compared item by item,
    ``true`` is not ``1``::

        precision = tp / (tp + fp),  recall = tp / (tp + fn)
        f1 = 2 * precision * recall / (precision + recall)      (0 when both are 0)

    Equal to RAGAS 0.4.3's ToolCallF1 before its rounding to 4 decimals, except where
    docs/peer-differences.md says: two empty lists score 1 here (RAGAS: 0), ``true`` does
    not match ``1`` (RAGAS compares Python values), and arguments holding lists or objects
    are scored (RAGAS raises). Precision and recall are in the feedback and are metrics of
    their own (``tool_call_precision``, ``tool_call_recall``)."""

    part: ClassVar[int] = 2

    def score_calls(self, actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> Outcome:
        parts = _f1_parts(actual, expected)
        return parts[self.part], f"precision {parts[0]:.4g}, recall {parts[1]:.4g}"

    def _score_rows(
        self,
        actual: Sequence[Sequence[ToolCall] | None],
        expected: Sequence[Sequence[ToolCall] | None],
    ) -> tuple[np.ndarray, dict[int, tuple[str, ErrorKind]], dict[int, str]]:
        """All rows at once: the distinct calls counted row by row, the ratios over the
        columns (the same floating-point operations as ``_f1_parts``)."""
        errors = lacking_calls(actual, expected)
        counts = distinct_counts(actual, expected)
        rows = np.flatnonzero(counts[:, 0] >= 0)
        tp, made, wanted = (counts[rows, k].astype(float) for k in range(3))
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(made > 0, tp / made, 0.0)
            recall = np.where(wanted > 0, tp / wanted, 0.0)
            total = precision + recall
            f1 = np.where(total > 0, 2 * precision * recall / total, 0.0)
        parts = np.stack([precision, recall, f1])
        parts[:, (made == 0) & (wanted == 0)] = 1.0  # nothing expected, nothing made
        scores = np.full(len(actual), np.nan)
        scores[rows] = parts[self.part]
        feedback = {
            i: f"precision {p:.4g}, recall {r:.4g}"
            for i, p, r in zip(rows.tolist(), parts[0].tolist(), parts[1].tolist(), strict=True)
        }
        return scores, errors, feedback


@register_metric("tool_call_precision")
class ToolCallPrecisionMetric(ToolCallF1Metric):
    """Tool call precision: distinct actual calls that were expected / distinct actual
    calls (``tp / (tp + fp)``; 0 when no call was made but some were expected)."""

    part = 0


@register_metric("tool_call_recall")
class ToolCallRecallMetric(ToolCallF1Metric):
    """Tool call recall: distinct expected calls that were made / distinct expected calls
    (``tp / (tp + fn)``; 0 when calls were made but none expected)."""

    part = 1


# -- arguments -------------------------------------------------------------------------------


@register_metric("argument_accuracy")
class ArgumentAccuracyMetric(ToolCallMetric):
    """Argument accuracy: the mean share of matching arguments over the calls made to the
    expected tools.

    ::

        score = mean of argument_accuracy(e, a) over the aligned pairs (e, a)

    ``argument_accuracy`` is the share of argument names, over both calls, whose values are
    equal as typed JSON. Calls are paired by name in any order (equal calls first, then by
    argument accuracy); ``strict_order`` pairs them in order. A row where no expected tool
    was called has no score (no arguments to compare), with that reason."""

    def __init__(self, strict_order: bool = False) -> None:
        self.strict_order = _check_bool("strict_order", strict_order)

    def score_calls(self, actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> Outcome:
        if reason := too_many_pairs(expected, actual):
            return None, reason
        align = align_ordered if self.strict_order else align_unordered
        pairs = align(expected, actual)
        if not pairs:
            return None, "no call of an expected tool was made: no arguments to compare"
        score = sum(w for _, _, w in pairs) / len(pairs)
        if score == 1.0:
            return score, None
        wrong = [
            f"{expected[i].name} #{i + 1}: {w:.0%} of arguments" for i, _, w in pairs if w < 1.0
        ]
        return score, "; ".join(wrong)


# -- trajectory ------------------------------------------------------------------------------


@register_metric("trajectory_match")
class TrajectoryMatchMetric(ToolCallMetric):
    """Trajectory match: 1 if the actual calls match the expected ones under ``mode``, else
    0. Calls are compared by name and arguments as typed JSON (by name alone with
    ``arguments=false``), as multisets except in ``strict``:

    - ``strict``: A == E, in order;
    - ``unordered``: A == E in any order;
    - ``subset``: every actual call is expected (A within E);
    - ``superset``: every expected call was made (E within A), extra calls allowed.
    """

    def __init__(self, mode: TrajectoryMode = "strict", arguments: bool = True) -> None:
        if mode not in TRAJECTORY_MODES:
            raise ValueError(f"mode must be one of {', '.join(TRAJECTORY_MODES)}, got {mode!r}")
        self.mode: TrajectoryMode = mode
        self.arguments = _check_bool("arguments", arguments)

    def score_calls(self, actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> Outcome:
        done: Sequence[Hashable]
        wanted: Sequence[Hashable]
        if self.arguments:
            done, wanted = keys_of(actual), keys_of(expected)
        else:
            done, wanted = [c.name for c in actual], [c.name for c in expected]
        if self.mode == "strict":
            if done == wanted:
                return 1.0, None
            return 0.0, "the calls differ from the expected ones in order or content"
        have, need = Counter(done), Counter(wanted)
        if self.mode == "unordered":
            ok = have == need
        elif self.mode == "subset":
            ok = not (have - need)
        else:
            ok = not (need - have)
        if ok:
            return 1.0, None
        extra, missing = sum((have - need).values()), sum((need - have).values())
        return 0.0, f"{missing} expected calls not made, {extra} calls not expected"
