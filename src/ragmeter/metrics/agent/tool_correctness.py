"""DeepEval's ToolCorrectnessMetric, its deterministic part (the tool-calling score; DeepEval's
optional judged tool-selection score is not part of it). Calls compare as DeepEval compares
them: same name and same type (``function``, DeepEval's default FUNCTION, or ``mcp``), and
with ``input_parameters`` arguments equal by Python's ``==`` (so ``1 == 1.0`` and also
``True == 1``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.datasets.agent import ToolCall
from ragmeter.errors import LimitError
from ragmeter.metrics.agent._calls import too_many_pairs
from ragmeter.metrics.agent.base import Outcome, ToolCallMetric
from ragmeter.metrics.registry import register_metric

__all__ = ["ToolCorrectnessMetric", "compare_arguments", "deepeval_tool_correctness"]


def compare_arguments(expected: Any, actual: Any) -> float:
    """DeepEval's parameter overlap::

    1 if equal, else sum over shared names k of
        1 / |K_e | K_a|                            if e[k] == a[k]
        compare(e[k], a[k]) / |K_e | K_a|          if both are objects
    """
    if expected == actual:
        return 1.0
    if not isinstance(expected, Mapping) or not isinstance(actual, Mapping):
        return 0.0
    score = 0.0
    total = len(set(expected) | set(actual))
    for key in set(expected) & set(actual):
        if expected[key] == actual[key]:
            score += 1 / total
        elif isinstance(expected[key], Mapping) and isinstance(actual[key], Mapping):
            score += compare_arguments(expected[key], actual[key]) / total
    return score


def _same_tool(expected: ToolCall, actual: ToolCall) -> bool:
    """Whether two calls call the same tool: the same name and type."""
    return expected.name == actual.name and expected.type == actual.type


def _pair_score(expected: ToolCall, actual: ToolCall, parameters: bool) -> float:
    if not _same_tool(expected, actual):
        return 0.0
    return compare_arguments(expected.arguments, actual.arguments) if parameters else 1.0


def _best_match(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], parameters: bool
) -> float:
    """Each expected call takes its best-scoring unused actual call (the first on ties).

    One difference from DeepEval: a call is used by position. DeepEval marks calls used by
    equality, so once one call is taken every call equal to it is taken too, and an agent
    that rightly calls the same tool twice with the same arguments scores 1/2 against the
    very same expected calls; here it scores 1."""
    if not expected:
        return 1.0 if not actual else 0.0
    total = 0.0
    taken: set[int] = set()
    for want in expected:
        best, chosen = 0.0, -1
        for j, call in enumerate(actual):
            if j in taken or not _same_tool(want, call):
                continue
            score = _pair_score(want, call, parameters)
            if score > best:
                best, chosen = score, j
        if best > 0:
            total += best
            taken.add(chosen)
    return total / len(expected)


def _weighted_lcs(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], parameters: bool
) -> float:
    """DeepEval's ordering score: a weighted longest common subsequence, its weight read
    back along DeepEval's own path through the table, over ``|E|``."""
    if not expected:
        return 1.0 if not actual else 0.0
    m, n = len(expected), len(actual)
    dp = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            want, call = expected[i - 1], actual[j - 1]
            if not _same_tool(want, call):
                dp[i][j] = max(dp[i - 1][j], dp[i][j - 1])
                continue
            score = _pair_score(want, call, parameters)
            dp[i][j] = max(dp[i - 1][j], dp[i][j - 1], dp[i - 1][j - 1] + score if score > 0 else 0)
    i, j, total = m, n, 0.0
    while i > 0 and j > 0:
        if dp[i][j] == dp[i - 1][j]:
            i -= 1
        elif dp[i][j] == dp[i][j - 1]:
            j -= 1
        else:
            total += dp[i][j] - dp[i - 1][j - 1]
            i, j = i - 1, j - 1
    return total / m


def _exact(expected: Sequence[ToolCall], actual: Sequence[ToolCall], parameters: bool) -> float:
    if len(actual) != len(expected):
        return 0.0
    for want, call in zip(expected, actual, strict=True):
        if not _same_tool(want, call) or (parameters and want.arguments != call.arguments):
            return 0.0
    return 1.0


def deepeval_tool_correctness(
    actual: Sequence[ToolCall],
    expected: Sequence[ToolCall],
    *,
    should_exact_match: bool = False,
    should_consider_ordering: bool = False,
    input_parameters: bool = False,
) -> float:
    """DeepEval's tool-calling score, mode by mode (``evaluation_params`` either empty or
    ``[INPUT_PARAMETERS]``):

    - exact match: 1 if the calls are the same tools in the same order (and arguments);
      a call matches only a call of the same name and type;
    - ordering: weighted LCS of expected and actual calls / |E|;
    - default: each expected call's best unused actual call, summed / |E| (extra calls
      cost nothing; a call is used by position, where DeepEval also treats every call equal
      to a used one as used).

    With ``input_parameters`` a pair weighs ``compare_arguments``, else 1. No expected
    calls: 1 if none were made, else 0. Past ``MAX_ALIGNED_PAIRS`` pairs of calls the
    ordering and default modes (which compare every pair) raise ``LimitError``."""
    if should_exact_match:
        return _exact(expected, actual, input_parameters)
    if reason := too_many_pairs(expected, actual):
        raise LimitError(reason, setting="max_tool_calls")
    if should_consider_ordering:
        return _weighted_lcs(expected, actual, input_parameters)
    return _best_match(expected, actual, input_parameters)


@register_metric("tool_correctness", aliases=("ToolCorrectness",))
class ToolCorrectnessMetric(ToolCallMetric):
    """DeepEval's tool correctness, equal to its ToolCorrectnessMetric's tool-calling score
    except where DeepEval mistakes a repeated call for a used one
    (``deepeval_tool_correctness``); a call matches one of the same name and type
    (``function`` or ``mcp``, DeepEval's FUNCTION and MCP): best match over expected calls by
    default,
    ``should_exact_match`` for the same calls in order, ``should_consider_ordering`` for a
    weighted LCS, ``input_parameters`` to weigh arguments (DeepEval's
    ``evaluation_params=[INPUT_PARAMETERS]``)."""

    def __init__(
        self,
        should_exact_match: bool = False,
        should_consider_ordering: bool = False,
        input_parameters: bool = False,
    ) -> None:
        for name, value in (
            ("should_exact_match", should_exact_match),
            ("should_consider_ordering", should_consider_ordering),
            ("input_parameters", input_parameters),
        ):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, got {value!r}")
        self.should_exact_match = should_exact_match
        self.should_consider_ordering = should_consider_ordering
        self.input_parameters = input_parameters

    def score_calls(self, actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> Outcome:
        if not self.should_exact_match and (reason := too_many_pairs(expected, actual)):
            return None, reason
        score = deepeval_tool_correctness(
            actual,
            expected,
            should_exact_match=self.should_exact_match,
            should_consider_ordering=self.should_consider_ordering,
            input_parameters=self.input_parameters,
        )
        if score == 1.0:
            return score, None
        return score, _feedback(actual, expected)


def _feedback(actual: Sequence[ToolCall], expected: Sequence[ToolCall]) -> str | None:
    """The tools expected but never called, and those called with another type."""
    called = {(c.name, c.type) for c in actual}
    names = {name for name, _ in called}
    parts = []
    missing = sorted({c.name for c in expected} - names)
    if missing:
        parts.append(f"missing tools: {', '.join(missing)}")
    retyped = sorted(
        {
            f"{c.name} ({c.type} expected)"
            for c in expected
            if c.name in names and (c.name, c.type) not in called
        }
    )
    if retyped:
        parts.append(f"called as another type: {', '.join(retyped)}")
    return "; ".join(parts) or None
