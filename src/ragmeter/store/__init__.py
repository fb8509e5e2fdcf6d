"""The store: SQLAlchemy models and migrations on SQLite (default) or PostgreSQL."""
