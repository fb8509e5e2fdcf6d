"""The judge protocol every LLM-judged metric talks to."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Judge"]


@runtime_checkable
class Judge(Protocol):
    """An LLM that answers a prompt with text."""

    async def complete(self, prompt: str) -> str: ...
