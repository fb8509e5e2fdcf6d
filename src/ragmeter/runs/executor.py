"""Executing a stored run: the rows it has not finished, ``parallel_num`` at a time, each
batch's rows committed as soon as they are scored. Re-executing a run (resume) skips the rows
already in the store, so none is lost and none is done twice."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence

from ragmeter.apps import AppError, AppPolicy
from ragmeter.datasets import Row
from ragmeter.errors import EmbeddingError, JudgeError, RagmeterError, StoreError
from ragmeter.judge.usage import Usage
from ragmeter.knowledge import KnowledgeBase
from ragmeter.metrics.context import EvaluationContext
from ragmeter.runs.evaluate import build_records, score_rows, usage_since, usage_snapshot
from ragmeter.runs.plan import RunPlan, build_plan
from ragmeter.runs.request import RunSpec
from ragmeter.runs.store import RunStore, add_usage

__all__ = ["execute_run"]

log = logging.getLogger(__name__)


def _batches(indices: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(indices), size):
        yield list(indices[start : start + size])


def _context(plan: RunPlan) -> EvaluationContext:
    """A fresh context per batch: metrics keep per-evaluation work in it by row position."""
    spec = plan.spec
    ctx = EvaluationContext(
        top_k=spec.top_k,
        embedder=plan.embedder,
        judge=plan.judge,
        max_concurrency=spec.parallel_num,
        plan=spec.plan,
        language=spec.language,
    )
    ctx.metrics = plan.metrics
    return ctx


async def _run_batches(plan: RunPlan, runs: RunStore, run_id: str, todo: list[int]) -> None:
    base_usage = dict(runs.get(run_id).usage or {})
    before = usage_snapshot(plan.judge)
    embedding = Usage()
    for batch in _batches(todo, plan.spec.parallel_num):
        if runs.get(run_id).state != "running":  # cancelled, maybe by another process
            raise asyncio.CancelledError
        ctx = _context(plan)
        rows = [plan.rows[i] for i in batch]
        produced: list[Row | str] = list(rows)
        if plan.target is not None:
            produced = await plan.target.produce(rows, ctx, lambda _n: None)
        per_metric = await score_rows(plan.metrics, produced, ctx)
        fatal = getattr(plan.judge, "fatal", None)
        if fatal:  # these rows were not judged: leave them for a resume
            raise JudgeError(fatal)
        records = build_records(rows, plan.metrics, per_metric, indices=batch)
        embedding.add(ctx.embedding_usage)
        ctx.embedding_usage = embedding
        usage = add_usage(base_usage, usage_since(plan.judge, before, ctx))
        runs.commit_rows(run_id, records, usage)


def _plan(runs: RunStore, kb: KnowledgeBase, run_id: str, policy: AppPolicy | None) -> RunPlan:
    record = runs.get(run_id)
    dataset = runs.dataset(record.dataset_id)
    source = f"dataset '{dataset.name}'" if dataset.name else "datasets"
    spec = RunSpec.model_validate(record.spec)
    return build_plan(spec, dataset.rows, kb, source=source, policy=policy)


async def execute_run(
    runs: RunStore, kb: KnowledgeBase, run_id: str, *, policy: AppPolicy | None = None
) -> None:
    """Take a pending run to done, failed or cancelled (the state is always written). An
    ``asyncio.CancelledError`` (a cancel request) leaves the run cancelled and resumable.
    The service gives its app ``policy``; the command line runs apps without one."""
    if not runs.start(run_id):
        return  # cancelled before a worker got to it
    plan: RunPlan | None = None
    try:
        plan = await asyncio.to_thread(_plan, runs, kb, run_id, policy)
        done = await asyncio.to_thread(runs.finished_rows, run_id)
        todo = [i for i in range(len(plan.rows)) if i not in done]
        await _run_batches(plan, runs, run_id, todo)
    except asyncio.CancelledError:
        if runs.get(run_id).state == "running":
            runs.finish(run_id, "cancelled")
        return
    except RagmeterError as exc:
        upstream = isinstance(exc, JudgeError | EmbeddingError | AppError)
        kind = "upstream" if upstream else "input"
        if isinstance(exc, StoreError):
            kind = "internal"
        runs.finish(run_id, "failed", str(exc), kind)
        return
    except Exception as exc:  # a bug or a library failure: the run says so, the worker lives
        log.exception("run %s failed", run_id)
        runs.finish(run_id, "failed", f"{type(exc).__name__}: {exc}", "internal")
        return
    finally:
        if plan is not None:
            await plan.aclose()
    if runs.get(run_id).state == "running":
        runs.finish(run_id, "done")
