"""Judges: the LLMs that LLM-judged metrics ask, through one shared engine."""

from ragmeter.judge.base import Judge
from ragmeter.judge.cache import JudgeCache
from ragmeter.judge.engine import JudgeEngine, JudgeSettings
from ragmeter.judge.usage import Usage

__all__ = ["Judge", "JudgeCache", "JudgeEngine", "JudgeSettings", "Usage"]
