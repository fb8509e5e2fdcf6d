"""Test sets generated from a space: start one (``POST /knowledge/spaces/{space}/testsets``),
then follow it like a run (``GET /knowledge/testsets/{id}``) or cancel it (``POST
/knowledge/testsets/{id}/cancel``); the rows become a dataset."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, status

from ragmeter.service.envelope import Result, ok
from ragmeter.service.state import Services, services
from ragmeter.wire.testsets import TestsetCreate, TestsetJob

__all__ = ["router"]

router = APIRouter(tags=["testsets"])
Deps = Annotated[Services, Depends(services)]


@router.post("/spaces/{space}/testsets", status_code=status.HTTP_202_ACCEPTED)
async def create_testset(space: str, body: TestsetCreate, svc: Deps) -> Result[TestsetJob]:
    """Start generating ``size`` gated questions from the space's chunks with a judge the
    server declares; the answer is the generation to follow with GET."""
    return ok(await asyncio.to_thread(svc.testsets.start, svc, space, body))


@router.get("/testsets/{job_id}")
def get_testset(job_id: str, svc: Deps) -> Result[TestsetJob]:
    """A generation's state, progress (accepted of size), gate counts and cost; once done,
    the dataset holding its rows."""
    return ok(svc.testsets.get(job_id))


@router.post("/testsets/{job_id}/cancel")
async def cancel_testset(job_id: str, svc: Deps) -> Result[TestsetJob]:
    """Stop a running generation; the rows it kept stay in its dataset and it ends
    ``cancelled`` (409 for a finished one)."""
    return ok(await asyncio.to_thread(svc.testsets.cancel, job_id))
