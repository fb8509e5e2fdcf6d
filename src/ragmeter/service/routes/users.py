"""Users and the audit log, for admins; ``whoami`` for anyone with a key."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, status
from pydantic import BaseModel, ConfigDict, Field

from ragmeter.service.envelope import Result, ok
from ragmeter.service.permissions import request_user
from ragmeter.service.state import Services, services
from ragmeter.store.lookup import MAX_STORED_INT
from ragmeter.store.users import Role
from ragmeter.wire.users import AuditEntryOut, UserKeyOut, UserOut

__all__ = ["router"]

router = APIRouter(tags=["users"])
Deps = Annotated[Services, Depends(services)]


class UserIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    role: Role


@router.get("/whoami")
def whoami(request: Request) -> Result[UserOut]:
    """The user this request acts as."""
    user = request_user(request)
    return ok(UserOut(name=user.name, role=user.role.value))


@router.get("/users")
def list_users(svc: Deps) -> Result[list[UserOut]]:
    return ok([UserOut.model_validate(u.as_dict()) for u in svc.users.list()])


@router.post("/users", status_code=status.HTTP_201_CREATED)
def add_user(body: UserIn, svc: Deps) -> Result[UserKeyOut]:
    """A new user; its key is in this answer only (the store keeps its hash)."""
    user, key = svc.users.add(body.name, body.role.value)
    return ok(UserKeyOut(name=user.name, role=user.role.value, key=key))


@router.post("/users/{name}/disable")
def disable_user(name: str, svc: Deps) -> Result[UserOut]:
    """Refuse the user's key and end its dashboard sessions from now on."""
    return ok(UserOut.model_validate(svc.users.disable(name).as_dict()))


@router.post("/users/{name}/rotate")
def rotate_key(name: str, svc: Deps) -> Result[UserKeyOut]:
    """A new key for the user (in this answer only); the old one stops working at once."""
    user, key = svc.users.rotate(name)
    return ok(UserKeyOut(name=user.name, role=user.role.value, key=key))


@router.get("/audit")
def audit(
    svc: Deps,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before_id: Annotated[int | None, Query(ge=1, le=MAX_STORED_INT)] = None,
    user: Annotated[str | None, Query(max_length=200)] = None,
) -> Result[list[AuditEntryOut]]:
    """The audit log, newest first: ``limit`` entries older than ``before_id`` (the last
    id of the page before), of one ``user`` if given."""
    page = svc.audit.page(limit=limit, before_id=before_id, user=user)
    return ok([AuditEntryOut.model_validate(e.as_dict()) for e in page])
