"""Users and their keys, and the audit log, in the store.

A user is a name, a role and a key. The key is 256 random bits shown once (``add``,
``rotate``); the store keeps its SHA-256 and its first characters (to find the row). A fast
hash suffices because the key is random: no guess reaches 2**256, so a slow hash (bcrypt,
argon2) would protect nothing more and cost every request tens of milliseconds."""

from __future__ import annotations

import enum
import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from ragmeter.errors import ConfigError, ConflictError, NotFoundError, StoreError
from ragmeter.store.db import Store, open_store, to_json
from ragmeter.store.lookup import is_id
from ragmeter.store.models import AuditRecord, DatasetRecord, RunRecord, SpaceRecord, UserRecord

__all__ = [
    "KEY_PREFIX",
    "RESERVED_NAMES",
    "AuditEntry",
    "AuditLog",
    "Role",
    "User",
    "UserStore",
    "creators",
    "parse_role",
]


class Role(enum.StrEnum):
    """What a user may do (``service.permissions`` has the table)."""

    ADMIN = "admin"
    MEMBER = "member"
    REVIEWER = "reviewer"
    VIEWER = "viewer"
    #: a program sending production traces (``POST /v1/traces``), nothing else
    INGEST = "ingest"


#: every key starts so (tells a ragmeter key in a config file or a leak scanner's report)
KEY_PREFIX = "rmk_"
#: characters of a key kept in clear to find its row: the prefix and 8 random ones (48 bits)
_LOOKUP_CHARS = len(KEY_PREFIX) + 8
#: the users of the modes without a users table: a configured key, and no key on loopback
RESERVED_NAMES = frozenset({"config", "local"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")
#: an audit entry's before/after JSON is cut past this many characters
MAX_AUDIT_JSON = 2000


@dataclass(frozen=True)
class User:
    """Who a request acts as."""

    name: str
    role: Role
    disabled: bool = False
    created_at: datetime | None = None
    #: the first characters of the key it was resolved from (None: not a stored user's key)
    key_prefix: str | None = None

    def as_dict(self) -> dict[str, Any]:
        created = self.created_at.isoformat() if self.created_at else None
        return {
            "name": self.name,
            "role": self.role.value,
            "disabled": self.disabled,
            "created_at": created,
        }


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def parse_role(text: str) -> Role:
    try:
        return Role(text)
    except ValueError:
        roles = ", ".join(r.value for r in Role)
        raise ConfigError(f"unknown role {text!r}: use one of {roles}") from None


def _user(record: UserRecord) -> User:
    return User(
        record.name, Role(record.role), record.disabled, record.created_at, record.key_prefix
    )


class UserStore:
    """The users of one store."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or open_store()

    def add(self, name: str, role: str) -> tuple[User, str]:
        """A new user and its key (shown this once; the store keeps only its hash)."""
        if not _NAME.match(name) or name in RESERVED_NAMES:
            raise ConfigError(
                f"invalid user name {name!r}: letters, digits, '.', '_', '@' or '-' (at most "
                f"100, starting with a letter or digit), not {' or '.join(sorted(RESERVED_NAMES))}"
            )
        found = parse_role(role)
        key = _new_key()
        record = UserRecord(
            name=name, role=found.value, key_prefix=key[:_LOOKUP_CHARS], key_hash=_hash(key)
        )
        try:
            with self.store.session() as session:
                session.add(record)
                session.commit()
        except IntegrityError:
            raise ConflictError(f"user '{name}' already exists") from None
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot store user '{name}': {exc}") from exc
        return _user(record), key

    def list(self) -> list[User]:
        with self.store.session() as session:
            records = session.scalars(select(UserRecord).order_by(UserRecord.name)).all()
            return [_user(r) for r in records]

    def get(self, name: str) -> User:
        with self.store.session() as session:
            return _user(self._record(session, name))

    def count(self) -> int:
        """How many users there are (disabled ones too)."""
        with self.store.session() as session:
            return int(session.scalar(select(func.count()).select_from(UserRecord)) or 0)

    def disable(self, name: str, *, disabled: bool = True) -> User:
        """Refuse (or accept again) the user's key from now on."""
        with self.store.session() as session:
            record = self._record(session, name)
            record.disabled = disabled
            session.commit()
            return _user(record)

    def rotate(self, name: str) -> tuple[User, str]:
        """A new key for the user; the old one stops working at once."""
        key = _new_key()
        with self.store.session() as session:
            record = self._record(session, name)
            record.key_prefix = key[:_LOOKUP_CHARS]
            record.key_hash = _hash(key)
            session.commit()
            return _user(record), key

    def active(self, name: str, key_prefix: str) -> bool:
        """Whether user ``name`` is enabled and still holds the key starting ``key_prefix``."""
        with self.store.session() as session:
            record = session.scalars(select(UserRecord).where(UserRecord.name == name)).first()
            return record is not None and not record.disabled and record.key_prefix == key_prefix

    def resolve(self, key: str) -> User | None:
        """The enabled user holding ``key``, or None."""
        if not key.startswith(KEY_PREFIX) or len(key) < _LOOKUP_CHARS:
            return None
        digest = _hash(key)
        with self.store.session() as session:
            records = session.scalars(
                select(UserRecord).where(UserRecord.key_prefix == key[:_LOOKUP_CHARS])
            ).all()
            for record in records:
                if hmac.compare_digest(record.key_hash, digest) and not record.disabled:
                    return _user(record)
        return None

    @staticmethod
    def _record(session: Any, name: str) -> UserRecord:
        record = session.scalars(select(UserRecord).where(UserRecord.name == name)).first()
        if record is None:
            raise NotFoundError(f"no user '{name}'")
        return record  # type: ignore[no-any-return]


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    user: str
    action: str
    object_kind: str
    object_id: str | None
    before: Any
    after: Any

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "user": self.user,
            "action": self.action,
            "object_kind": self.object_kind,
            "object_id": self.object_id,
            "before": self.before,
            "after": self.after,
        }


def _capped(value: Any) -> Any:
    """``value`` as stored: JSON up to ``MAX_AUDIT_JSON`` characters, else its cut text."""
    if value is None:
        return None
    text = to_json(value)
    return value if len(text) <= MAX_AUDIT_JSON else {"truncated": text[:MAX_AUDIT_JSON]}


class AuditLog:
    """Every change, newest last: written by the service after each change it made."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or open_store()

    def record(
        self,
        user: str,
        action: str,
        object_kind: str,
        object_id: str | None = None,
        *,
        before: Any = None,
        after: Any = None,
    ) -> None:
        entry = AuditRecord(
            user_name=user[:200],
            action=action[:300],
            object_kind=object_kind[:32],
            object_id=None if object_id is None else object_id[:300],
            before=_capped(before),
            after=_capped(after),
        )
        with self.store.session() as session:
            session.add(entry)
            session.commit()

    def page(
        self, *, limit: int = 50, before_id: int | None = None, user: str | None = None
    ) -> Sequence[AuditEntry]:
        """Up to ``limit`` entries, newest first, older than ``before_id`` if given."""
        query = select(AuditRecord).order_by(AuditRecord.id.desc()).limit(limit)
        if before_id is not None:
            query = query.where(AuditRecord.id < before_id)
        if user is not None:
            query = query.where(AuditRecord.user_name == user)
        with self.store.session() as session:
            return [
                AuditEntry(
                    r.id, r.at, r.user_name, r.action, r.object_kind, r.object_id, r.before, r.after
                )
                for r in session.scalars(query)
            ]


def _dataset_choice(key: str) -> Any:
    """Which dataset versions a key names as ``DatasetStore.delete_dataset`` reads it: an id
    or ``NAME@V`` one, a name every version."""
    if is_id(key):
        return DatasetRecord.id == int(key)
    name, at, version = key.partition("@")
    if at:
        return (DatasetRecord.name == name) & (
            DatasetRecord.version == (int(version) if is_id(version) else -1)
        )
    return DatasetRecord.name == key


def creators(store: Store, kind: str, key: str) -> list[str | None]:
    """Who made each object a route names by ``key``: a run (its id), a space (name or id),
    a dataset (id, name: every version, or ``NAME@V``); empty when there is none."""
    text = key.strip()
    query: Any
    if kind == "run":
        query = select(RunRecord.created_by).where(RunRecord.id == text)
    elif kind == "space":
        column, value = (SpaceRecord.id, int(text)) if is_id(text) else (SpaceRecord.name, text)
        query = select(SpaceRecord.created_by).where(column == value)
    elif kind == "dataset":
        query = select(DatasetRecord.created_by).where(_dataset_choice(text))
    else:
        raise ValueError(f"no owner of a {kind}")
    with store.session() as session:
        return list(session.scalars(query))
