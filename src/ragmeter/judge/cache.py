"""The judge cache in the store: a validated reply per request key, so a re-run sends nothing."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import StoreError
from ragmeter.store.db import Store
from ragmeter.store.models import JudgeCacheEntry

__all__ = ["CachedReply", "JudgeCache", "cache_key"]

#: INSERT ... ON CONFLICT DO NOTHING by database: two rows storing one reply at once keep it
#: once, neither failing on the other's row
_INSERT_OR_KEEP: dict[str, Callable[..., Any]] = {
    "sqlite": sqlite_insert,
    "postgresql": postgresql_insert,
}


def cache_key(*, model: str, base_url: str, messages: Any, parameters: Any, schema: Any) -> str:
    """SHA-256 over everything that shapes a reply (never the API key)."""
    blob = json.dumps(
        {
            "model": model,
            "base_url": base_url.rstrip("/"),
            "messages": messages,
            "parameters": parameters,
            "schema": schema,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedReply:
    content: str
    prompt_tokens: int
    completion_tokens: int
    #: made by ragmeter's scripted judge
    scripted: bool = False


class JudgeCache:
    """Reads and writes ``judge_cache`` rows (blocking; the engine calls it off the loop)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> CachedReply | None:
        try:
            with self.store.session() as session:
                entry = session.get(JudgeCacheEntry, key)
        except SQLAlchemyError as exc:
            raise StoreError(f"judge cache read failed: {exc}") from exc
        if entry is None:
            return None
        return CachedReply(
            entry.content, entry.prompt_tokens, entry.completion_tokens, bool(entry.scripted)
        )

    def put(self, key: str, model: str, base_url: str, reply: CachedReply) -> None:
        values = {
            "key": key,
            "model": model,
            "base_url": base_url,
            "content": reply.content,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "scripted": reply.scripted,
        }
        try:
            with self.store.session() as session:
                insert = _INSERT_OR_KEEP.get(self.store.engine.dialect.name)
                if insert is not None:
                    statement = insert(JudgeCacheEntry).values(values)
                    session.execute(statement.on_conflict_do_nothing(index_elements=["key"]))
                else:
                    session.merge(JudgeCacheEntry(**values))
                session.commit()
        except SQLAlchemyError as exc:
            raise StoreError(f"judge cache write failed: {exc}") from exc

    def count(self) -> int:
        with self.store.session() as session:
            return session.query(JudgeCacheEntry).count()
