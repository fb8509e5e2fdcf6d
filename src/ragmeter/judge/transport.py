"""The judge's chat transport as the engine sees it: the module (``ragmeter.judge.chat``,
with httpx) imported once per process on a thread of its own, and a reply read from its raw
JSON body."""

from __future__ import annotations

import concurrent.futures
import importlib
import json
import threading
from types import ModuleType
from typing import Any

__all__ = ["SCRIPTED_FINGERPRINT", "import_transport", "reply_parts"]

#: the ``system_fingerprint`` of every reply of ragmeter's scripted judge (``judge-server``):
#: scores it gave are marked as such wherever they are shown
SCRIPTED_FINGERPRINT = "ragmeter-scripted-judge"

_transport_lock = threading.Lock()
_transport: concurrent.futures.Future[ModuleType] | None = None


def import_transport() -> concurrent.futures.Future[ModuleType]:
    """The chat transport (``ragmeter.judge.chat``, with httpx), imported once per process on
    a thread of its own: started by the first call, awaited by every engine (of any thread or
    loop)."""
    global _transport
    with _transport_lock:
        if _transport is None:
            future: concurrent.futures.Future[ModuleType] = concurrent.futures.Future()
            # running: it cannot be cancelled. A cancelled run awaiting it (asyncio.wrap_future
            # passes a cancel on) would otherwise cancel the import for every later run.
            future.set_running_or_notify_cancel()

            def load() -> None:
                try:
                    future.set_result(importlib.import_module("ragmeter.judge.chat"))
                except BaseException as exc:  # raised by every await of it
                    future.set_exception(exc)

            threading.Thread(target=load, name="ragmeter-import-http", daemon=True).start()
            _transport = future
        return _transport


def reply_parts(body: bytes) -> tuple[str, int | None, int | None, bool]:
    """A chat completion's first message content ("" when there is none), its prompt and
    completion tokens (None when the server did not say) and whether ragmeter's scripted
    judge made it, read from the raw JSON body as leniently as OpenAI's SDK reads it: a body
    that is not the expected shape has no content."""
    try:
        reply = json.loads(body)
    except ValueError:
        return "", None, None, False
    if not isinstance(reply, dict):
        return "", None, None, False
    scripted = reply.get("system_fingerprint") == SCRIPTED_FINGERPRINT
    content = ""
    choices = reply.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            content = message["content"]
    counted = reply.get("usage")
    if not isinstance(counted, dict):
        return content, None, None, scripted
    return (
        content,
        _count_of(counted.get("prompt_tokens")),
        _count_of(counted.get("completion_tokens")),
        scripted,
    )


def _count_of(value: Any) -> int:
    """A token count as the server gave it; 0 for a missing or non-numeric one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value)) if value == value and abs(value) < 2**53 else 0
