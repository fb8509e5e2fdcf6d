"""Prompt templates by code in the store: add (checked), list, show, remove."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import ConfigError, ConflictError, NotFoundError, StoreError, clip
from ragmeter.prompts.templates import check_template
from ragmeter.store.db import Store, open_store
from ragmeter.store.lookup import known_names
from ragmeter.store.models import PromptRecord
from ragmeter.store.names import key_text, normal_text, single_script

__all__ = ["PromptStore"]

_CODE = re.compile(r"[\w][\w.\-]{0,199}\Z")


class PromptStore:
    """The prompt templates of one store."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or open_store()

    def add(
        self,
        code: str,
        template: str,
        *,
        kind: str = "judge",
        language: str | None = None,
        description: str = "",
        replace: bool = False,
    ) -> PromptRecord:
        """Store a template after checking its variables; an existing code needs ``replace``
        (else a ConflictError, to which each interface adds how it says "replace")."""
        code = normal_text(code, "prompt code")
        if not _CODE.match(code):
            raise ConfigError(
                f"invalid prompt code {code!r}: use letters, digits, '_', '-' or '.' (at most 200)"
            )
        single_script(code, "prompt code")
        if language not in (None, "en", "zh"):
            raise ConfigError(f"language must be en or zh, got {language!r}")
        check_template(template, kind)
        try:
            with self.store.session() as session:
                record = session.scalars(
                    select(PromptRecord).where(PromptRecord.code == code)
                ).first()
                if record is not None and not replace:
                    raise ConflictError(f"prompt '{code}' already exists")
                if record is None:
                    record = PromptRecord(code=code)
                    session.add(record)
                record.kind = kind
                record.language = language
                record.template = template
                record.description = description
                session.commit()
                session.refresh(record)
                return record
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store prompt '{code}': {exc}") from exc

    def get(self, code: str, kind: str | None = None) -> PromptRecord:
        """A prompt by code; NotFoundError listing the codes, ConfigError if of another kind."""
        code = key_text(code)
        with self.store.session() as session:
            record = session.scalars(select(PromptRecord).where(PromptRecord.code == code)).first()
            if record is None:
                hint = "ragmeter prompt add CODE --file F"
                known = known_names(session, PromptRecord.code, hint)
                raise NotFoundError(f"no prompt '{clip(code)}'; known: {known}")
        if kind is not None and record.kind != kind:
            raise ConfigError(
                f"prompt '{code}' is a {record.kind} prompt; this needs one added with "
                f"--kind {kind}"
            )
        return record

    def prompts(self, offset: int = 0, limit: int | None = None) -> list[PromptRecord]:
        """Prompts by code; ``offset`` and ``limit`` page them (the service's list)."""
        query = select(PromptRecord).order_by(PromptRecord.code).offset(offset).limit(limit)
        with self.store.session() as session:
            return list(session.scalars(query).all())

    def remove(self, code: str) -> None:
        record = self.get(code)
        with self.store.session() as session:
            session.delete(session.get(PromptRecord, record.id))
            session.commit()
