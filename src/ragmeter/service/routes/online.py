"""Online evaluation rules: list them (with what each spent today and the traces it scored),
make, change and delete the stored ones. Rules of ragmeter.toml are listed, never changed
here. Members make rules and change their own; admins change any."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Path

from ragmeter.config import OnlineRule
from ragmeter.errors import ConfigError
from ragmeter.service.envelope import Result, ok
from ragmeter.service.state import Services, services
from ragmeter.wire.online import OnlineRuleInfo, OnlineRulePatch

__all__ = ["router"]

router = APIRouter(prefix="/online", tags=["online"])
Deps = Annotated[Services, Depends(services)]
RuleName = Annotated[str, Path(min_length=1, max_length=64)]


@router.get("/rules")
async def list_rules(svc: Deps) -> Result[list[OnlineRuleInfo]]:
    """Every rule (ragmeter.toml's first), with its requests, tokens and traces of today
    (UTC) and the traces it scored in all."""
    return ok(await asyncio.to_thread(svc.online.info, svc.settings))


@router.get("/rules/{name}")
async def get_rule(name: RuleName, svc: Deps) -> Result[OnlineRuleInfo]:
    return ok(await asyncio.to_thread(svc.online.one, svc.settings, name))


@router.post("/rules", status_code=201)
async def create_rule(body: OnlineRule, svc: Deps) -> Result[OnlineRuleInfo]:
    """Make a rule; it scores the kept complete traces from the oldest on, then new ones.
    Its metrics and judge are checked now (400 naming the first unknown one); past a cap,
    400 naming the setting."""
    await asyncio.to_thread(svc.online.create, svc.settings, body)
    return ok(await asyncio.to_thread(svc.online.one, svc.settings, body.name))


@router.put("/rules/{name}")
async def replace_rule(name: RuleName, body: OnlineRule, svc: Deps) -> Result[OnlineRuleInfo]:
    """Replace a stored rule whole (its cursor and today's spending are kept)."""
    if body.name != name:
        raise ConfigError(f"name: the body names rule '{body.name}', the path '{name}'")
    await asyncio.to_thread(svc.online.replace, svc.settings, body)
    return ok(await asyncio.to_thread(svc.online.one, svc.settings, name))


@router.patch("/rules/{name}")
async def change_rule(name: RuleName, body: OnlineRulePatch, svc: Deps) -> Result[OnlineRuleInfo]:
    """Change the fields given (``{"enabled": false}`` pauses a rule)."""
    changes = body.model_dump(exclude_unset=True)
    await asyncio.to_thread(svc.online.patch, svc.settings, name, changes)
    return ok(await asyncio.to_thread(svc.online.one, svc.settings, name))


@router.delete("/rules/{name}")
async def delete_rule(name: RuleName, svc: Deps) -> Result[dict[str, str]]:
    """Delete a stored rule and its cursor (its scores stay with the traces)."""
    await asyncio.to_thread(svc.online.delete, svc.settings, name)
    return ok({"deleted": name})
