"""Judges: the LLMs that LLM-judged metrics ask, through one shared engine.

Names load on first use: a metric that only names the ``Judge`` protocol does not import the
engine (openai) or the cache (SQLAlchemy)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names

if TYPE_CHECKING:
    from ragmeter.judge.base import Judge
    from ragmeter.judge.cache import JudgeCache
    from ragmeter.judge.engine import JudgeEngine, JudgeSettings
    from ragmeter.judge.usage import Usage

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.judge.base": ("Judge",),
        "ragmeter.judge.cache": ("JudgeCache",),
        "ragmeter.judge.engine": ("JudgeEngine", "JudgeSettings"),
        "ragmeter.judge.usage": ("Usage",),
    },
)

__all__ = ["Judge", "JudgeCache", "JudgeEngine", "JudgeSettings", "Usage"]
