"""``ToolAgent``: an OpenAI-compatible chat model run as an agent. For each row it offers the
row's ``available_tools``, runs every tool call the model makes through the user's tools (a
Python function, or an HTTP endpoint taking ``{"name", "arguments"}``), hands the results back,
and stops when the model answers without a call or after ``max_steps`` model turns. The row
gets the whole conversation as ``messages``, and per model turn its latency and tokens."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ragmeter.apps.base import AppAnswer, AppError
from ragmeter.datasets import Row
from ragmeter.datasets.agent import AgentFormatError, read_messages
from ragmeter.errors import ConfigError, RagmeterError, public_url
from ragmeter.judge.engine import JudgeSettings
from ragmeter.judge.usage import Usage

__all__ = ["DEFAULT_MAX_STEPS", "ToolAgent", "ToolRunner"]

#: model turns per row unless the agent says
DEFAULT_MAX_STEPS = 8
#: characters of one tool result handed back to the model and kept in the row
MAX_RESULT_CHARS = 20_000

#: runs one tool call: (name, arguments) -> its result (text, or any JSON value)
ToolRunner = Callable[[str, Any], Any] | Callable[[str, Any], Awaitable[Any]]


class ToolAgent:
    """``model`` (the settings of an OpenAI-compatible chat endpoint) acting with ``tools``: a
    function ``(name, arguments) -> result`` or the URL of an endpoint answering
    ``POST {"name": ..., "arguments": ...}`` with the result (JSON ``{"result": ...}`` or text)."""

    def __init__(
        self,
        name: str,
        model: JudgeSettings,
        tools: ToolRunner | str,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        system_prompt: str | None = None,
    ) -> None:
        if max_steps < 1:
            raise ConfigError(f"max_steps must be at least 1, got {max_steps}")
        if not isinstance(tools, str) and not callable(tools):
            raise ConfigError("tools must be a function (name, arguments) or an http(s) URL")
        if isinstance(tools, str) and not tools.startswith(("http://", "https://")):
            raise ConfigError(f"tools URL must start with http:// or https://: {tools!r}")
        self._name = name
        self.model = model
        self.tools = tools
        self.max_steps = max_steps
        self.system_prompt = system_prompt
        #: what the agent's model calls cost (requests, tokens), apart from the judge's
        self.usage = Usage()
        self._chat: Any = None
        self._http: Any = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def failure(self) -> RagmeterError | None:
        return None  # a model or tool failing on a row is that row's failure

    async def answer(self, query: str) -> AppAnswer:
        return await self.answer_row(Row(query=query))

    async def answer_row(self, row: Row) -> AppAnswer:
        """Run the agent on ``row``'s query with its ``available_tools``."""
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": row.query})
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters or {"type": "object", "properties": {}},
                },
            }
            for t in row.available_tools or ()
        ]
        steps: list[dict[str, float]] = []
        for _ in range(self.max_steps):
            reply, step = await self._turn(messages, tools)
            steps.append(step)
            messages.append(reply)
            calls = reply.get("tool_calls") or []
            if not calls:
                break
            for call in calls:
                messages.append(await self._run_tool(call))
        try:
            conversation = read_messages(messages)
        except AgentFormatError as exc:
            raise AppError(f"agent '{self.name}': the model's reply is unreadable: {exc}") from None
        last = messages[-1]
        answer = str(last.get("content") or "") if last.get("role") == "assistant" else ""
        return AppAnswer(answer, [], messages=conversation, steps=tuple(steps))

    async def _turn(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], dict[str, float]]:
        from ragmeter.judge.chat import (
            ChatClient,
            ChatConnectionError,
            ChatStatusError,
            ChatTimeout,
        )

        if self._chat is None:
            settings = self.model
            self._chat = ChatClient(settings.base_url, settings.api_key, settings.timeout)
        body: dict[str, Any] = {
            "model": self.model.model,
            "messages": messages,
            "temperature": self.model.temperature,
        }
        if tools:
            body["tools"] = tools
        started = time.perf_counter()
        try:
            raw = await self._chat.complete(body)
        except (ChatConnectionError, ChatStatusError, ChatTimeout) as exc:
            where = public_url(self.model.base_url)
            raise AppError(f"agent '{self.name}': the model at {where} failed: {exc}") from None
        seconds = max(time.perf_counter() - started, 0.0)
        try:
            data = json.loads(raw)
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise AppError(
                f"agent '{self.name}': the model's reply is not a chat completion"
            ) from None
        if not isinstance(message, dict):
            raise AppError(f"agent '{self.name}': the model's reply has no message")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt = float(usage.get("prompt_tokens") or 0)
        completion = float(usage.get("completion_tokens") or 0)
        self.usage.add(Usage(requests=1, prompt_tokens=prompt, completion_tokens=completion))
        reply = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            reply["tool_calls"] = message["tool_calls"]
        step = {"latency_s": seconds, "prompt_tokens": prompt, "completion_tokens": completion}
        return reply, step

    async def _run_tool(self, call: Any) -> dict[str, Any]:
        """The tool message answering ``call`` (an OpenAI tool call); a tool's failure is
        handed back to the model as the result, as agents do."""
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise AppError(f"agent '{self.name}': a tool call without a function name")
        name = function["name"]
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = function.get("arguments")
        try:
            result = await self._call_tool(name, arguments)
        except AppError:
            raise
        except Exception as exc:  # the tool's own error, shown to the model
            result = f"error: {type(exc).__name__}: {exc}"
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        return {"role": "tool", "tool_call_id": call.get("id"), "content": text[:MAX_RESULT_CHARS]}

    async def _call_tool(self, name: str, arguments: Any) -> Any:
        if not isinstance(self.tools, str):
            runner = self.tools
            if inspect.iscoroutinefunction(runner):
                return await runner(name, arguments)
            value = await asyncio.to_thread(runner, name, arguments)
            return await value if inspect.isawaitable(value) else value
        import httpx

        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self.model.timeout, follow_redirects=False)
        try:
            response = await self._http.post(
                self.tools, json={"name": name, "arguments": arguments}
            )
        except httpx.HTTPError as exc:
            where = public_url(self.tools)
            raise AppError(f"agent '{self.name}': the tools at {where} failed: {exc}") from None
        if response.status_code >= 400:
            return f"error: HTTP {response.status_code}: {response.text[:300]}"
        try:
            data = response.json()
        except ValueError:
            return response.text
        return data.get("result", data) if isinstance(data, dict) else data

    async def aclose(self) -> None:
        for client in (self._chat, self._http):
            if client is not None:
                await client.aclose()
        self._chat = self._http = None
