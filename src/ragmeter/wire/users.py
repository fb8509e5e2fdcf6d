"""Users and the audit log as the API answers them (a key only in ``UserKeyOut``, once)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

__all__ = ["AuditEntryOut", "UserKeyOut", "UserOut"]


class UserOut(BaseModel):
    name: str
    role: str
    disabled: bool = False
    created_at: datetime | None = None


class UserKeyOut(BaseModel):
    """A user with its new key, answered once by ``POST /users`` and ``.../rotate``."""

    name: str
    role: str
    key: str


class AuditEntryOut(BaseModel):
    """One change: who, when, what (method and path), on what, ids before and after."""

    id: int
    at: datetime
    user: str
    action: str
    object_kind: str
    object_id: str | None = None
    before: Any = None
    after: Any = None
