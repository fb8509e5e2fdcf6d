"""Test tools: the scripted judge, an OpenAI-compatible server (chat and embeddings) with
deterministic verdicts, injectable faults and pinned answers, for dry runs (``ragmeter
judge-server``) and tests; ``assert_metrics`` and the pytest plugin
(``ragmeter.testing.pytest_plugin``) to gate rows in tests. Nothing in ragmeter's evaluation
path imports this package."""

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names
from ragmeter.testing.pinned import PinnedAnswers, read_pinned
from ragmeter.testing.server import FaultPlan, ScriptedJudgeServer, parse_faults

if TYPE_CHECKING:
    from ragmeter.testing.assertions import GateFailed, assert_metrics

__getattr__ = lazy_names(
    __name__, {"ragmeter.testing.assertions": ("GateFailed", "assert_metrics")}
)

__all__ = [
    "FaultPlan",
    "GateFailed",
    "PinnedAnswers",
    "ScriptedJudgeServer",
    "assert_metrics",
    "parse_faults",
    "read_pinned",
]
