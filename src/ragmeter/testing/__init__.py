"""Test tools: the scripted judge, an OpenAI-compatible server (chat and embeddings) with
deterministic verdicts and injectable faults, for dry runs (``ragmeter judge-server``) and tests.
Nothing in ragmeter's evaluation path imports this package."""

from ragmeter.testing.server import FaultPlan, ScriptedJudgeServer, parse_faults

__all__ = ["FaultPlan", "ScriptedJudgeServer", "parse_faults"]
