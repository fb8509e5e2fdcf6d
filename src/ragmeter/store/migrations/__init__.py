"""Alembic migrations of the store, applied on open."""
