"""Prompt templates by code in the store: add (checked), list, show, remove. Editing a
prompt makes its next version and keeps every version: ``CODE`` names the newest,
``CODE@2`` version 2, what a run that used it was given."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from ragmeter.errors import ConfigError, ConflictError, NotFoundError, StoreError, clip
from ragmeter.prompts.templates import check_template
from ragmeter.store.db import Store, open_store
from ragmeter.store.lookup import known_names, next_version, split_version
from ragmeter.store.models import PromptRecord, PromptVersionRecord
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
                content = (kind, language, template, description)
                if record is not None and _content(record) == content:
                    return record  # nothing changed: no new version
                if record is None:
                    record = PromptRecord(code=code)
                    session.add(record)
                record.kind, record.language, record.template, record.description = content
                record.version = next_version(
                    session, PromptVersionRecord.version, PromptVersionRecord.code, code
                )
                session.add(
                    PromptVersionRecord(
                        code=code,
                        version=record.version,
                        kind=kind,
                        language=language,
                        template=template,
                        description=description,
                    )
                )
                session.commit()
                session.refresh(record)
                return record
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store prompt '{code}': {exc}") from exc

    def get(self, code: str, kind: str | None = None) -> PromptRecord:
        """A prompt by code (its newest version) or ``CODE@V`` (version V, as a record not
        bound to the store); NotFoundError listing the codes, ConfigError if of another
        kind."""
        name, version = split_version(key_text(code), "prompt")
        with self.store.session() as session:
            record = session.scalars(select(PromptRecord).where(PromptRecord.code == name)).first()
            if version is not None and (record is None or record.version != version):
                made_by = None if record is None else record.created_by
                record = _version(session, name, version, made_by)
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

    def pinned(self, code: str, kind: str | None = None) -> str:
        """``CODE@V`` of the prompt ``code`` names (its newest version unless it names one):
        what a run keeps, so that later edits never change what it was given."""
        record = self.get(code, kind)
        return f"{record.code}@{record.version}"

    def versions(self, code: str) -> list[PromptVersionRecord]:
        """Every version of a code, oldest first (a removed prompt's too)."""
        query = (
            select(PromptVersionRecord)
            .where(PromptVersionRecord.code == code)
            .order_by(PromptVersionRecord.version)
        )
        with self.store.session() as session:
            return list(session.scalars(query).all())

    def prompts(self, offset: int = 0, limit: int | None = None) -> list[PromptRecord]:
        """Prompts by code; ``offset`` and ``limit`` page them (the service's list)."""
        query = select(PromptRecord).order_by(PromptRecord.code).offset(offset).limit(limit)
        with self.store.session() as session:
            return list(session.scalars(query).all())

    def remove(self, code: str) -> None:
        """Remove a prompt; its versions stay, for the runs that used them."""
        if "@" in code:
            raise ConfigError(f"remove takes a prompt's code, not one version: {clip(code)!r}")
        record = self.get(code)
        with self.store.session() as session:
            session.delete(session.get(PromptRecord, record.id))
            session.commit()


def _content(record: PromptRecord) -> tuple[str, str | None, str, str]:
    return (record.kind, record.language, record.template, record.description)


def _version(session: Any, code: str, version: int, made_by: str | None) -> PromptRecord | None:
    """Version ``version`` of ``code`` as a prompt record not bound to any session (made
    by ``made_by``, the prompt's maker)."""
    found = session.scalars(
        select(PromptVersionRecord).where(
            PromptVersionRecord.code == code, PromptVersionRecord.version == version
        )
    ).first()
    if found is None:
        return None
    return PromptRecord(
        code=code,
        kind=found.kind,
        language=found.language,
        template=found.template,
        description=found.description,
        version=version,
        created_by=made_by,
        created_at=found.created_at,
        updated_at=found.created_at,
    )
