"""Executing a stored run: ``parallel_num`` row workers each take the next row as soon as they
are free, have the target produce it and the metrics score it, and hand it to one committer,
which writes whatever rows have finished in one transaction (in a worker thread, never on the
event loop) and stops the workers when the run is no longer ``running`` (cancelled here, by
the API, or by another process). Re-executing a run (resume) skips the rows already in the
store, so none is lost and none is done twice."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from ragmeter._public import internal_reference
from ragmeter.apps import AppError, AppPolicy
from ragmeter.errors import EmbeddingError, JudgeError, LimitError, RagmeterError, StoreError
from ragmeter.knowledge import KnowledgeBase
from ragmeter.metrics.context import EmbeddingBatcher, EvaluationContext
from ragmeter.reports import ResultRecord
from ragmeter.reports.report import json_default
from ragmeter.runs.evaluate import build_records, score_rows, usage_since, usage_snapshot
from ragmeter.runs.plan import RunPlan, build_plan
from ragmeter.runs.request import RunSpec
from ragmeter.runs.store import RunState, RunStore, add_usage

__all__ = ["RunLimits", "execute_run"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: how often an idle committer checks whether the run was stopped by another process
_STATE_POLL_S = 1.0
#: a row worker put this on the queue: it has no rows left (or stopped)
_WORKER_DONE = object()


class _Stopped(Exception):
    """The run is no longer running (cancelled or interrupted from elsewhere)."""


def _context(plan: RunPlan, batcher: EmbeddingBatcher) -> EvaluationContext:
    """A fresh context per row: metrics keep per-evaluation work in it by row position. The
    batcher is shared, so concurrent rows still embed in batched calls."""
    spec = plan.spec
    ctx = EvaluationContext(
        top_k=spec.top_k,
        judge=plan.judge,
        max_concurrency=spec.parallel_num,
        plan=spec.plan,
        language=spec.language,
        batcher=batcher,
    )
    ctx.metrics = plan.metrics
    return ctx


async def _steady(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even if the caller is cancelled meanwhile (then re-raise), so
    a transaction under way is over before the run's state is written."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        raise


async def _prefetch_queries(plan: RunPlan, todo: list[int]) -> None:
    """Embed every pending query in one call before the rows start (the searcher caches the
    vectors), so per-row vector searches do not embed one query at a time."""
    holder = getattr(plan.target, "app", plan.target)  # a RagApp searches; an HttpApp not
    searcher = getattr(holder, "searcher", None)
    if searcher is None or getattr(holder, "retriever", "bm25") == "bm25" or not todo:
        return
    await searcher.embed_queries([plan.rows[i].query for i in todo])


async def _score_row(plan: RunPlan, index: int, batcher: EmbeddingBatcher) -> list[ResultRecord]:
    """One row produced by the target and scored by every metric."""
    ctx = _context(plan, batcher)
    row = plan.rows[index]
    produced: list[Any] = [row]
    if plan.target is not None:
        produced = await plan.target.produce([row], ctx, lambda _n: None)
    per_metric = await score_rows(plan.metrics, produced, ctx)
    fatal = getattr(plan.judge, "fatal", None)
    if fatal:  # the row was not judged: leave it for a resume
        raise JudgeError(fatal)
    return build_records([row], plan.metrics, per_metric, indices=[index])


async def _row_worker(
    plan: RunPlan, feed: Iterator[int], batcher: EmbeddingBatcher, out: asyncio.Queue[Any]
) -> None:
    """Take the next row as soon as the last one is scored; hand each to the committer."""
    try:
        for index in feed:  # one iterator shared by every worker of the run
            out.put_nowait(await _score_row(plan, index, batcher))
    except Exception as exc:  # the committer raises it, after storing the rows before it
        out.put_nowait(exc)
    finally:
        out.put_nowait(_WORKER_DONE)


async def _commit(
    runs: RunStore, run_id: str, records: list[ResultRecord], usage: dict[str, float]
) -> str:
    """Store finished rows in one transaction, off the event loop; the run's state after."""
    return await _steady(asyncio.to_thread(runs.commit_rows, run_id, records, usage))


async def _next_items(queue: asyncio.Queue[Any], runs: RunStore, run_id: str) -> list[Any]:
    """Everything the workers have handed over, waiting for at least one item; while idle,
    raise ``_Stopped`` when the run was stopped by another process."""
    while True:
        try:
            first = await asyncio.wait_for(queue.get(), _STATE_POLL_S)
        except TimeoutError:
            if await asyncio.to_thread(runs.state, run_id) != "running":
                raise _Stopped from None
            continue
        items = [first]
        while not queue.empty():
            items.append(queue.get_nowait())
        return items


@dataclass(frozen=True)
class RunLimits:
    """What one execution of a run may take (the service's ``[server]`` limits); past either
    the run stops, keeping its rows, resumable."""

    max_seconds: float | None = None
    max_bytes: int | None = None


def _stored_bytes(records: list[ResultRecord]) -> int:
    """About what ``records`` take in the store: their predictions, contexts and rows (a
    row shared by several results is measured once and counted for each)."""
    sizes: dict[int, int] = {}
    total = 0
    for r in records:
        key = id(r.raw_dataset)
        if key not in sizes:
            sizes[key] = len(json.dumps(r.raw_dataset, default=json_default))
        total += sizes[key] + len(json.dumps([r.prediction, r.contexts], default=json_default))
    return total


class _Budget:
    """Bytes one execution of a run may store (``max_run_mb``, None: no limit). A row is
    stored only if it fits whole, so no row, however wide, takes the store past it."""

    def __init__(self, max_bytes: int | None) -> None:
        self.max_bytes = max_bytes
        self.left = max_bytes
        self.too_wide: int | None = None  # a row that alone passes the whole budget

    def take(self, rows: list[list[ResultRecord]]) -> tuple[list[ResultRecord], bool]:
        """The records of the leading rows that fit, and whether every row fitted."""
        kept: list[ResultRecord] = []
        for row in rows:
            if self.left is not None:
                size = _stored_bytes(row)
                if size > self.left:
                    if self.max_bytes is not None and size > self.max_bytes and row:
                        self.too_wide = row[0].row_index
                    return kept, False
                self.left -= size
            kept.extend(row)
        return kept, True

    def exceeded(self) -> LimitError:
        megabytes = (self.max_bytes or 0) / 1_000_000
        if self.too_wide is not None:
            return LimitError(
                f"row {self.too_wide} alone would store more than {megabytes:g} MB of results "
                "(its texts are kept once per metric); shorten it or ask for fewer metrics",
                setting="[server] max_run_mb",
            )
        return LimitError(
            f"the run would store more than {megabytes:g} MB of results; fewer rows or metrics "
            "per run, or resume it to go on",
            setting="[server] max_run_mb",
        )


async def _commit_loop(
    runs: RunStore,
    run_id: str,
    queue: asyncio.Queue[Any],
    workers: int,
    usage: Callable[[], dict[str, float]],
    budget: _Budget,
) -> None:
    """Commit rows as they finish until every worker is done; re-raise a worker's failure
    once the rows finished before it are stored; ``_Stopped`` when the run stopped; a
    ``LimitError`` (after storing the rows that fit) once a row would pass the budget."""
    while workers:
        items = await _next_items(queue, runs, run_id)
        workers -= sum(item is _WORKER_DONE for item in items)
        records, fitted = budget.take([item for item in items if isinstance(item, list)])
        if records and await _commit(runs, run_id, records, usage()) != "running":
            raise _Stopped
        if not fitted:
            raise budget.exceeded()
        failures = [item for item in items if isinstance(item, BaseException)]
        if failures:
            raise failures[0]


async def _keep_leftovers(
    runs: RunStore,
    run_id: str,
    queue: asyncio.Queue[Any],
    usage: dict[str, float],
    budget: _Budget,
) -> None:
    """Rows scored but not yet stored when the run stopped: store those that fit the
    budget (they cost work)."""
    rows: list[list[ResultRecord]] = []
    while not queue.empty():
        item = queue.get_nowait()
        if isinstance(item, list):
            rows.append(item)
    records, _ = budget.take(rows)
    try:
        await _commit(runs, run_id, records, usage)  # no records: the run's final usage
    except StoreError:
        log.exception("run %s: cannot store its last rows", run_id)


async def _run_rows(
    plan: RunPlan, runs: RunStore, run_id: str, todo: list[int], limits: RunLimits
) -> None:
    record = await asyncio.to_thread(runs.get, run_id)
    base_usage = dict(record.usage or {})
    before = usage_snapshot(plan.judge)
    batcher = EmbeddingBatcher(plan.embedder)
    counter = _context(plan, batcher)  # sees the batcher's embedding counts

    def usage() -> dict[str, float]:
        return add_usage(base_usage, usage_since(plan.judge, before, counter))

    await _prefetch_queries(plan, todo)
    queue: asyncio.Queue[Any] = asyncio.Queue()
    feed = iter(todo)
    count = min(plan.spec.parallel_num, len(todo))
    workers = [asyncio.create_task(_row_worker(plan, feed, batcher, queue)) for _ in range(count)]
    budget = _Budget(limits.max_bytes)
    try:
        try:
            async with asyncio.timeout(limits.max_seconds):
                await _commit_loop(runs, run_id, queue, count, usage, budget)
        except TimeoutError:
            hours = (limits.max_seconds or 0) / 3600
            raise LimitError(
                f"the run took longer than {hours:g} h; resume it to go on",
                setting="[server] max_run_hours",
            ) from None
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await _keep_leftovers(runs, run_id, queue, usage(), budget)


def _plan(runs: RunStore, kb: KnowledgeBase, run_id: str, policy: AppPolicy | None) -> RunPlan:
    record = runs.get(run_id)
    dataset = runs.dataset(record.dataset_id)
    source = f"dataset '{dataset.name}'" if dataset.name else "datasets"
    spec = RunSpec.model_validate(record.spec)
    rows = list(runs.iter_dataset_rows(dataset.id))  # the plan validates and holds them all
    return build_plan(spec, rows, kb, source=source, policy=policy)


def _internal(run_id: str, exc: BaseException) -> str:
    """Log an unexpected failure with a reference; the public message names only that."""
    return internal_reference(exc, f" in run {run_id}")


async def _finish(
    runs: RunStore, run_id: str, state: RunState, error: str | None = None, kind: str | None = None
) -> None:
    """running -> ``state``; a run cancelled or interrupted meanwhile keeps its state."""
    await _steady(asyncio.to_thread(runs.finish, run_id, state, error, kind))


async def _execute(
    runs: RunStore,
    kb: KnowledgeBase,
    run_id: str,
    policy: AppPolicy | None,
    limits: RunLimits,
) -> None:
    plan: RunPlan | None = None
    try:
        plan = await asyncio.to_thread(_plan, runs, kb, run_id, policy)
        done = await asyncio.to_thread(runs.finished_rows, run_id)
        todo = [i for i in range(len(plan.rows)) if i not in done]
        await _run_rows(plan, runs, run_id, todo, limits)
    finally:
        if plan is not None:
            await plan.aclose()


async def execute_run(
    runs: RunStore,
    kb: KnowledgeBase,
    run_id: str,
    *,
    policy: AppPolicy | None = None,
    limits: RunLimits | None = None,
) -> None:
    """Take a pending run to done, failed or cancelled. An ``asyncio.CancelledError`` (a
    cancel request) leaves the run cancelled and resumable; a state set meanwhile by someone
    else (a cancel, an interrupt) is never overwritten. The service gives its app ``policy``
    and its ``limits`` (past them the run fails, resumable); the command line runs apps
    without a policy and runs without limits."""
    if not await asyncio.to_thread(runs.start, run_id):
        return  # cancelled before a worker got to it
    try:
        await _execute(runs, kb, run_id, policy, limits or RunLimits())
    except (asyncio.CancelledError, _Stopped):
        await _finish(runs, run_id, "cancelled")
    except StoreError as exc:  # its text may hold SQL and parameters: kept for the log
        await _finish(runs, run_id, "failed", _internal(run_id, exc), "internal")
    except RagmeterError as exc:
        upstream = isinstance(exc, JudgeError | EmbeddingError | AppError)
        kind = "upstream" if upstream else "input"
        await _finish(runs, run_id, "failed", str(exc), kind)
    except Exception as exc:  # a bug or a library failure: the run says so, the worker lives
        await _finish(runs, run_id, "failed", _internal(run_id, exc), "internal")
    else:
        await _finish(runs, run_id, "done")
