"""Apps: what the ``app`` scene evaluates. An app answers a query with an answer and the
contexts it used; ``answer_many`` lets an app batch work across all queries."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ragmeter.datasets.agent import (
    AgentFormatError,
    Message,
    ToolCall,
    final_answer,
    read_messages,
    read_tool_calls,
)
from ragmeter.errors import ConfigError, RagmeterError

__all__ = ["App", "AppAnswer", "AppError", "AppRefused", "CallableApp", "as_answer"]


class AppError(RagmeterError):
    """An app failed to answer one query; the row gets a null score with this reason."""


class AppRefused(ConfigError):
    """The server does not let this app do what it is set to do (reach its host, say): a
    setting to change, not a failure worth retrying."""


@dataclass(frozen=True, slots=True)
class AppAnswer:
    """An app's reply: the answer text and the retrieved contexts, in rank order; an agent's
    also its conversation (``messages``, normalised) or only the ``tool_calls`` it made, and
    per step its latency and tokens (``steps``)."""

    answer: str
    contexts: list[str] = field(default_factory=list)
    messages: tuple[Message, ...] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    steps: tuple[dict[str, float], ...] = ()


@runtime_checkable
class App(Protocol):
    """Anything that answers queries. ``answer_many`` (optional) answers a batch at once and
    returns, per query, an ``AppAnswer`` or the exception that query failed with. ``failure``
    (optional) is why the app cannot answer at all (unreachable, not allowed), or None: the
    evaluation then stops with that error instead of failing every row one by one."""

    @property
    def name(self) -> str: ...

    async def answer(self, query: str) -> AppAnswer: ...


def _contexts(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence):
        out: list[str] = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, Mapping):
                text = next(
                    (item[k] for k in ("content", "text", "page_content") if k in item), None
                )
                if not isinstance(text, str):
                    raise AppError(f"{where}: a context object has no 'content' or 'text'")
                out.append(text)
            else:
                raise AppError(f"{where}: contexts must be strings, got {type(item).__name__}")
        return out
    raise AppError(f"{where}: contexts must be a list, got {type(value).__name__}")


def as_answer(value: Any, where: str = "the app") -> AppAnswer:
    """Accept what a user's function naturally returns: a string, an ``(answer, contexts)``
    pair, a dict with ``answer``/``response`` and ``contexts``, or an ``AppAnswer``."""
    if isinstance(value, AppAnswer):
        return value
    if isinstance(value, str):
        return AppAnswer(value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return AppAnswer(value[0], _contexts(value[1], where))
    if isinstance(value, Mapping):
        messages, calls = _agent_parts(value, where)
        answer = next((value[k] for k in ("answer", "response", "prediction") if k in value), None)
        if answer is None and messages is not None:
            answer = final_answer(messages) or ""
        if not isinstance(answer, str):
            raise AppError(f"{where} returned a dict without a string 'answer'")
        contexts = next((value[k] for k in ("contexts", "retrieved_contexts") if k in value), None)
        return AppAnswer(answer, _contexts(contexts, where), messages=messages, tool_calls=calls)
    raise AppError(
        f"{where} returned {type(value).__name__}; return a string, (answer, contexts) "
        "or {'answer': ..., 'contexts': [...]}"
    )


def _agent_parts(
    value: Mapping[str, Any], where: str
) -> tuple[tuple[Message, ...] | None, tuple[ToolCall, ...] | None]:
    """An agent's ``messages`` (any format the dataset readers take) or ``tool_calls``."""
    try:
        messages = read_messages(value["messages"]) if value.get("messages") is not None else None
        calls = (
            read_tool_calls(value["tool_calls"]) if value.get("tool_calls") is not None else None
        )
    except AgentFormatError as exc:
        raise AppError(f"{where} returned unreadable agent steps: {exc}") from None
    return messages, calls


class CallableApp:
    """A Python function (sync, run in a worker thread, or async) as an app."""

    def __init__(self, function: Callable[[str], Any], name: str | None = None) -> None:
        if not callable(function):
            raise TypeError(f"expected a callable, got {type(function).__name__}")
        self.function = function
        self._name: str = name or str(getattr(function, "__name__", "callable"))

    @property
    def name(self) -> str:
        return self._name

    @property
    def failure(self) -> RagmeterError | None:
        return None  # a function's failures are its rows' own

    async def answer(self, query: str) -> AppAnswer:
        if inspect.iscoroutinefunction(self.function):
            value = await self.function(query)
        else:
            value = await asyncio.to_thread(self.function, query)
            if inspect.isawaitable(value):
                value = await value
        return as_answer(value, f"app '{self.name}'")
