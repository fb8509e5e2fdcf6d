"""The judge protocol every LLM-judged metric talks to."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Judge", "RequestGate"]


@runtime_checkable
class Judge(Protocol):
    """An LLM that answers a prompt with text."""

    async def complete(self, prompt: str) -> str: ...


class RequestGate(Protocol):
    """Asked before each request a judge engine sends (``JudgeEngine.gate``), retries and
    re-asks included: ``before`` may refuse it (raising ``JudgeError``, the metric's null
    reason) or return a ticket, given back to ``after`` with the tokens the reply took."""

    async def before(self, messages: list[dict[str, str]]) -> Any: ...

    async def after(self, ticket: Any, tokens: int) -> None: ...
