"""The scripted judge: an OpenAI-compatible server with deterministic verdicts, for dry runs
and tests."""

from ragmeter.judge.scripted.server import FaultPlan, ScriptedJudgeServer, parse_faults

__all__ = ["FaultPlan", "ScriptedJudgeServer", "parse_faults"]
