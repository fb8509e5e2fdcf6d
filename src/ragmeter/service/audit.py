"""The audit trail: every request that changed something (a route needing more than
``read``, answered below 400) is written to the audit log before its answer leaves: who,
the method and path, the kind of object, the ids it named (``before``) and the ids its
answer names (``after``: a new run's id, a dataset's name and version)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragmeter.store.users import AuditLog, User

__all__ = ["AuditTrail", "answer_ids"]

log = logging.getLogger(__name__)

#: an answer is read for ids up to this size (a change answers with one small object)
_MAX_READ = 1 << 16
#: the fields of an answer's ``data`` that name what the change made or touched
_ID_FIELDS = ("id", "run_id", "evaluate_code", "code", "name", "version", "job_id", "space")


def answer_ids(body: bytes) -> dict[str, Any] | None:
    """The id fields of an envelope's ``data`` object, or None."""
    try:
        data = json.loads(body).get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, dict):
        return None
    found = {k: data[k] for k in _ID_FIELDS if isinstance(data.get(k), str | int)}
    return found or None


class AuditTrail:
    """Writes the audit entry of each change ``permissions.authorize`` noted in the scope
    (``ragmeter.audit``) once the route answered with success, then sends the answer."""

    def __init__(self, app: ASGIApp, audit: AuditLog) -> None:
        self.app = app
        self.audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        held: list[Message] = []
        size = 0

        async def audited(message: Message) -> None:
            nonlocal size
            note = scope.get("ragmeter.audit")
            if note is None or (held and held[0]["status"] >= 400):
                await _flush(held, send)
                await send(message)
                return
            held.append(message)
            if message["type"] == "http.response.body":
                size += len(message.get("body", b""))
                if size <= _MAX_READ and message.get("more_body", False):
                    return
            if message["type"] == "http.response.body":
                await self._write(scope, note, held, send)

        await self.app(scope, receive, audited)

    async def _write(self, scope: Scope, note: Any, held: list[Message], send: Send) -> None:
        scope.pop("ragmeter.audit", None)  # once per request
        kind, ids = note
        user: User | None = scope.get("ragmeter.user")
        body = b"".join(m.get("body", b"") for m in held[1:])
        after = answer_ids(body) if len(body) <= _MAX_READ else None
        object_id = "/".join(str(v) for v in ids.values()) or None
        action = f"{scope.get('method')} {scope.get('path')}"
        await asyncio.to_thread(
            self.audit.record,
            user.name if user else "anonymous",
            action,
            kind,
            object_id,
            before=ids or None,
            after=after,
        )
        await _flush(held, send)


async def _flush(held: list[Message], send: Send) -> None:
    while held:
        await send(held.pop(0))
