"""The store: SQLAlchemy models and migrations on SQLite (default) or PostgreSQL."""

from ragmeter.store.db import Store, open_store
from ragmeter.store.models import Base, JudgeCacheEntry

__all__ = ["Base", "JudgeCacheEntry", "Store", "open_store"]
