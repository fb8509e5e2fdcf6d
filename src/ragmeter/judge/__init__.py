"""Judges: the LLMs that LLM-judged metrics ask."""

from ragmeter.judge.base import Judge

__all__ = ["Judge"]
