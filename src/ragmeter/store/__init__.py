"""The store: SQLAlchemy models and migrations on SQLite (default) or PostgreSQL."""

from ragmeter.store.db import Store, open_store
from ragmeter.store.models import (
    AppRecord,
    Base,
    ChunkRecord,
    DatasetRecord,
    DatasetRowRecord,
    DocumentRecord,
    JudgeCacheEntry,
    PromptRecord,
    ResultRow,
    RunRecord,
    RunTag,
    SpaceRecord,
)

__all__ = [
    "AppRecord",
    "Base",
    "ChunkRecord",
    "DatasetRecord",
    "DatasetRowRecord",
    "DocumentRecord",
    "JudgeCacheEntry",
    "PromptRecord",
    "ResultRow",
    "RunRecord",
    "RunTag",
    "SpaceRecord",
    "Store",
    "open_store",
]
