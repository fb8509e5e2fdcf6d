"""The one execution path of every evaluation (``evaluate()``, ``ragmeter eval``, the service):
``concurrency`` workers each take the next batch of rows as soon as they are free, have the
target produce it and the metrics score it, and hand it to one committer, which gives whatever
rows have finished to a sink: the store (in one transaction, in a worker thread, never on the
event loop) or memory (an evaluation that keeps nothing). The committer stops the workers when
a stored run is no longer ``running`` (cancelled here, by the API, or by another process).
Re-executing a run (resume) skips the rows already in the store, so none is lost and none is
done twice.

A batch is one row when a judge or an app is asked (rows are kept as they finish, and a row
is the unit of concurrency); otherwise rows are scored many at a time, by the metrics' batch
kernels."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ragmeter._public import internal_reference
from ragmeter.apps import AppError, AppPolicy
from ragmeter.datasets import Dataset, DatasetLimits, Row
from ragmeter.errors import (
    ConfigError,
    EmbeddingError,
    JudgeError,
    LimitError,
    RagmeterError,
    StoreError,
)
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.metrics import LLMEvaluationMetric
from ragmeter.metrics.context import EmbeddingBatcher, EvaluationContext
from ragmeter.runs.execution.sinks import (
    Budget,
    MemorySink,
    RunMaking,
    ScoredBatch,
    Sink,
    StoreSink,
)
from ragmeter.runs.planning.config import EvaluationConfig
from ragmeter.runs.planning.plan import RunPlan, build_plan
from ragmeter.runs.planning.scoring import score_rows, usage_since, usage_snapshot
from ragmeter.runs.planning.targets import AppTarget
from ragmeter.runs.storage.store import RunState, RunStore, add_usage

__all__ = [
    "Executor",
    "MakingStop",
    "MemorySink",
    "Progress",
    "RunLimits",
    "Sink",
    "StoreSink",
    "execute_plan",
    "execute_run",
    "leave_cancelled",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: how often an idle committer checks whether the run was stopped by another process
_STATE_POLL_S = 1.0
#: a row worker put this on the queue: it has no rows left (or stopped)
_WORKER_DONE = object()


#: scored batches that may wait for the committer at least (``_Handover``)
_WAITING = 4


class _Handover:
    """Scored batches from the workers to the committer. At most ``waiting`` batches wait
    to be kept; past it a worker waits for the committer (the store keeps retrieval results
    slower than they are scored: with no bound, a million rows' results piled up, 4 GB).
    A worker's failure and its end never wait."""

    def __init__(self, waiting: int) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self._slots = asyncio.Semaphore(waiting)

    async def put(self, batch: ScoredBatch) -> None:
        await self._slots.acquire()
        self.queue.put_nowait(batch)

    def signal(self, item: Any) -> None:
        """A worker's failure or ``_WORKER_DONE``."""
        self.queue.put_nowait(item)

    def taken(self, batches: int) -> None:
        """The committer took ``batches`` off the queue: as many workers may hand one over."""
        for _ in range(batches):
            self._slots.release()


#: rows scored at once by metrics that ask no judge (committed together)
BATCH_ROWS = 10_000


class _Stopped(Exception):
    """The run is no longer running (cancelled or interrupted from elsewhere)."""


@dataclass(frozen=True)
class Progress:
    """Callbacks for a caller's progress bars: rows the target produced, and row x metric
    results finished (each called with how many more)."""

    target: Callable[[int], None] | None = None
    results: Callable[[int], None] | None = None


def _context(
    plan: RunPlan, batcher: EmbeddingBatcher, on_progress: Callable[[int], None] | None = None
) -> EvaluationContext:
    """A fresh context per batch: metrics keep per-evaluation work in it by row position. The
    batcher is shared, so concurrent rows still embed in batched calls."""
    config = plan.config
    ctx = EvaluationContext(
        top_k=config.top_k,
        judge=plan.judge,
        max_concurrency=config.concurrency,
        plan=config.plan,
        language=config.language,
        batcher=batcher,
        on_progress=on_progress,
        relevance_level=config.relevance_level,
        no_relevant=config.no_relevant,
    )
    ctx.metrics = plan.metrics
    return ctx


def batch_rows(plan: RunPlan, whole: bool = False) -> int:
    """Rows per batch: one where a judge or an app answers (each row kept as it finishes),
    else ``BATCH_ROWS`` (the metrics' kernels score many rows at once), or every row when
    nothing is stored (``whole``: no commit to make along the way)."""
    judged = any(isinstance(m, LLMEvaluationMetric) for m in plan.metrics)
    if judged or isinstance(plan.target, AppTarget):
        return 1
    return max(1, len(plan.rows)) if whole else BATCH_ROWS


async def _steady(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even if the caller is cancelled meanwhile (then re-raise), so
    a transaction under way is over before the run's state is written."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        raise


async def _prefetch_queries(plan: RunPlan, todo: Sequence[int]) -> None:
    """Embed every pending query in one call before the rows start (the searcher caches the
    vectors), so per-row vector searches do not embed one query at a time."""
    holder = getattr(plan.target, "app", plan.target)  # a RagApp searches; an HttpApp not
    searcher = getattr(holder, "searcher", None)
    if searcher is None or getattr(holder, "retriever", "bm25") == "bm25" or not todo:
        return
    queries = plan.rows.column("query")
    await searcher.embed_queries([queries[i] for i in todo])


async def _quietly(work: Awaitable[Any]) -> None:
    """Await ``work``, dropping its failure: whoever needs its result gets that failure."""
    with contextlib.suppress(Exception):
        await work


def _embed_ahead(plan: RunPlan, rows: Dataset, batcher: EmbeddingBatcher) -> None:
    """Start embedding the texts of ``rows`` that the metrics embed as they are (their
    ``embeds`` fields) now, while the judge works on the rows: the metrics then find the
    vectors ready or on their way (a failure reaches them as it would have)."""
    fields = dict.fromkeys(f for m in plan.metrics for f in getattr(m, "embeds", ()))
    texts = [t for f in fields for t in rows.column(f) if isinstance(t, str) and t]
    if texts:
        task = asyncio.ensure_future(_quietly(batcher.embed(texts)))
        _ahead.add(task)
        task.add_done_callback(_ahead.discard)


#: embeddings started ahead and not done yet (kept referenced until then)
_ahead: set[asyncio.Future[None]] = set()


async def _score_batch(
    plan: RunPlan, indices: Sequence[int], batcher: EmbeddingBatcher, progress: Progress
) -> ScoredBatch:
    """Rows produced by the target and scored by every metric, as columns."""
    ctx = _context(plan, batcher, progress.results)
    whole = len(indices) == len(plan.rows) and (not indices or indices[-1] == len(indices) - 1)
    rows = plan.rows if whole else plan.rows.take(indices)
    _embed_ahead(plan, rows, batcher)
    produced: Any = rows
    kept: Any = rows
    if plan.target is not None:
        target_progress = progress.target or (lambda _n: None)
        produced = await plan.target.produce(list(rows), ctx, target_progress)
        kept = _as_kept(rows, produced)
    columns = await score_rows(plan.metrics, produced, ctx)
    fatal = getattr(plan.judge, "fatal", None)
    if fatal:  # the rows were not judged: leave them for a resume
        raise JudgeError(fatal)
    return ScoredBatch(list(indices), kept, columns, stored=plan.target is None)


def _as_kept(rows: Dataset, produced: Sequence[Any]) -> Any:
    """The rows as kept: the dataset's, with what the target found for them in place of any
    the dataset had: the contexts and chunk ids a space retrieved (the Row view marks relevance
    by those ids), an agent's conversation and its steps; the rows themselves when the target
    filled none of these."""
    kept: list[Row] = []
    changed = False
    for row, made in zip(rows, produced, strict=True):
        update: dict[str, Any] = {}
        if isinstance(made, Row):
            if made.retrieved_ids is not None:
                update["retrieved_contexts"] = made.retrieved_contexts
                update["retrieved_ids"] = made.retrieved_ids
            if made.messages is not None and made.messages != row.messages:
                update["messages"] = made.messages
            if made.metadata != row.metadata:
                update["metadata"] = made.metadata
        changed = changed or bool(update)
        kept.append(row.model_copy(update=update) if update else row)
    return Dataset(kept, rows.source, rows.lines) if changed else rows


async def _row_worker(
    plan: RunPlan,
    feed: Iterator[Sequence[int]],
    batcher: EmbeddingBatcher,
    out: _Handover,
    progress: Progress,
) -> None:
    """Take the next batch as soon as the last one is scored; hand each to the committer."""
    try:
        for indices in feed:  # one iterator shared by every worker of the run
            await out.put(await _score_batch(plan, indices, batcher, progress))
    except Exception as exc:  # the committer raises it, after keeping the rows before it
        out.signal(exc)
    finally:
        out.signal(_WORKER_DONE)


async def _keep(sink: Sink, batches: list[ScoredBatch], usage: dict[str, float]) -> bool:
    """Keep finished rows (one transaction), off the event loop; whether still running.
    A ``LimitError`` when a row would not fit the sink's budget (rows before it kept). Rows
    of a run still being made are made ready first, and committed once it is made."""
    if isinstance(sink, StoreSink) and sink.making is not None:
        return await _keep_making(sink, sink.making, batches, usage)
    return await _steady(asyncio.to_thread(sink.keep, batches, usage))


async def _keep_making(
    sink: StoreSink, making: RunMaking, batches: list[ScoredBatch], usage: dict[str, float]
) -> bool:
    """``_keep`` for a run that ``making`` makes: nothing when it was not made; while it is
    being made, the rows are prepared, then committed once it is (or, stopped meanwhile,
    if it was made)."""
    if making.made is False:
        return False  # the run was not made: nothing to keep them in
    if making.made is None:
        ready = await _steady(asyncio.to_thread(sink.prepare, batches))
        try:
            await making.wait()
        except asyncio.CancelledError:
            if _made(making):  # made meanwhile: kept, as a stop keeps finished rows
                await _steady(asyncio.to_thread(sink.commit, ready, usage))
            raise
        return await _steady(asyncio.to_thread(sink.commit, ready, usage))
    return await _steady(asyncio.to_thread(sink.keep, batches, usage))


def _made(making: RunMaking) -> bool:
    return making.made is True


async def _next_items(queue: asyncio.Queue[Any], sink: Sink) -> list[Any]:
    """Everything the workers have handed over, waiting for at least one item; while idle,
    raise ``_Stopped`` when the run was stopped by another process."""
    while True:
        try:  # not wait_for: on 3.11 it can swallow a cancel that lands as the item arrives
            async with asyncio.timeout(_STATE_POLL_S):
                first = await queue.get()
        except TimeoutError:
            if not await asyncio.to_thread(sink.running):
                raise _Stopped from None
            continue
        items = [first]
        while not queue.empty():
            items.append(queue.get_nowait())
        return items


class Executor(Protocol):
    """Scores a plan's rows somewhere other than this process's event loop (a cluster): the
    batches come back as they finish, in any order; this process keeps them (the store stays
    its). None (the default) scores them here, ``concurrency`` rows at a time."""

    def scored(self, plan: RunPlan, todo: Sequence[int]) -> AsyncIterator[ScoredBatch]: ...

    def usage(self) -> dict[str, float]:
        """What the batches back so far took (judge requests, tokens, embeddings)."""
        ...


async def _remote_worker(
    executor: Executor, plan: RunPlan, todo: Sequence[int], out: _Handover
) -> None:
    """Hand the executor's batches to the committer as they come back."""
    try:
        async for batch in executor.scored(plan, todo):
            await out.put(batch)
    except Exception as exc:  # the committer raises it, after keeping the rows before it
        out.signal(exc)
    finally:
        out.signal(_WORKER_DONE)


@dataclass(frozen=True)
class RunLimits:
    """What one execution of a run may take (the service's ``[server]`` limits); past either
    the run stops, keeping its rows, resumable."""

    max_seconds: float | None = None
    max_bytes: int | None = None


async def _commit_loop(
    sink: Sink,
    handover: _Handover,
    workers: int,
    usage: Callable[[], dict[str, float]],
) -> None:
    """Keep rows as they finish until every worker is done; re-raise a worker's failure
    once the rows finished before it are kept; ``_Stopped`` when the run stopped; a
    ``LimitError`` (after keeping the rows that fit) once a row would pass the budget."""
    while workers:
        items = await _next_items(handover.queue, sink)
        workers -= sum(item is _WORKER_DONE for item in items)
        batches = [item for item in items if isinstance(item, ScoredBatch)]
        kept = batches and await _keep(sink, batches, usage())
        handover.taken(len(batches))
        if batches and not kept:
            raise _Stopped
        failures = [item for item in items if isinstance(item, BaseException)]
        if failures:
            raise failures[0]


async def _keep_leftovers(sink: Sink, queue: asyncio.Queue[Any], usage: dict[str, float]) -> None:
    """Rows scored but not yet kept when the run stopped: keep those that fit the budget
    (they cost work), and the run's final usage."""
    batches: list[ScoredBatch] = []
    while not queue.empty():
        item = queue.get_nowait()
        if isinstance(item, ScoredBatch):
            batches.append(item)
    try:
        await _keep(sink, batches, usage)
    except (StoreError, LimitError):
        log.exception("cannot keep the last rows of a run")


def _batches(todo: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(todo), size):
        yield todo[start : start + size]


async def execute_plan(
    plan: RunPlan,
    sink: Sink,
    todo: Sequence[int] | None = None,
    *,
    base_usage: dict[str, Any] | None = None,
    limits: RunLimits | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> None:
    """Evaluate the rows ``todo`` (default: all) of ``plan`` into ``sink``, here or on
    ``executor``. Raises what stopped it (a fatal judge error, a limit, ``_Stopped``) after
    keeping every row finished before; the plan's clients are not closed here."""
    todo = range(len(plan.rows)) if todo is None else list(todo)  # a range: batches slice
    limits = limits or RunLimits()
    progress = progress or Progress()
    before = usage_snapshot(plan.judge)
    batcher = EmbeddingBatcher(plan.embedder)
    counter = _context(plan, batcher)  # sees the batcher's embedding counts

    def usage() -> dict[str, float]:
        mine = usage_since(plan.judge, before, counter)
        if executor is not None:
            mine = add_usage(mine, executor.usage())
        return add_usage(base_usage or {}, mine)

    if executor is not None:
        count = 1
        handover = _Handover(_WAITING)
        workers = [asyncio.create_task(_remote_worker(executor, plan, todo, handover))]
    else:
        await _prefetch_queries(plan, todo)
        size = batch_rows(plan, whole=isinstance(sink, MemorySink))
        feed = _batches(todo, size)
        count = min(plan.config.concurrency, -(-len(todo) // size))
        handover = _Handover(max(_WAITING, count))  # each worker may hand one over
        workers = [
            asyncio.create_task(_row_worker(plan, feed, batcher, handover, progress))
            for _ in range(count)
        ]
    try:
        try:
            async with asyncio.timeout(limits.max_seconds):
                await _commit_loop(sink, handover, count, usage)
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
        await _keep_leftovers(sink, handover.queue, usage())


def _plan(runs: RunStore, kb: KnowledgeBase, run_id: str, policy: AppPolicy | None) -> RunPlan:
    record = runs.get(run_id)
    config = EvaluationConfig.from_stored(record.spec)
    if config.objects:
        parts = ", ".join(sorted(config.objects))
        raise ConfigError(
            f"run '{run_id}' was made from Python with objects for {parts}; resume it by "
            "calling evaluate() again with the same run name and objects"
        )
    dataset = runs.dataset(record.dataset_id)
    source = f"dataset '{dataset.name}'" if dataset.name else "datasets"
    rows = list(runs.iter_dataset_rows(dataset.id))  # the plan validates and holds them all
    # the rows' tool calls were held to the cap of whoever stored them (the service's
    # [server] max_tool_calls may be above the library's)
    limits = DatasetLimits(max_tool_calls=None)
    return build_plan(config, rows, kb, source=source, policy=policy, limits=limits)


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
    plan: RunPlan | None,
    progress: Progress | None,
    also: MemorySink | None = None,
    executor: Executor | None = None,
    making: RunMaking | None = None,
) -> None:
    own = plan is None
    try:
        if plan is None:
            plan = await asyncio.to_thread(_plan, runs, kb, run_id, policy)
        todo: list[int] | None = None  # a new run (being made): every row, no usage yet
        usage: dict[str, Any] = {}
        if making is None:
            done = await asyncio.to_thread(runs.finished_rows, run_id)
            todo = [i for i in range(len(plan.rows)) if i not in done]
            record = await asyncio.to_thread(runs.get, run_id)
            usage = dict(record.usage or {})
        budget = Budget((limits or RunLimits()).max_bytes)
        await execute_plan(
            plan,
            StoreSink(runs, run_id, plan.metrics, budget, also, making),
            todo,
            base_usage=usage,
            limits=limits,
            progress=progress,
            executor=executor,
        )
    finally:
        if own and plan is not None:
            await plan.aclose()


def _hold_lease(runs: RunStore, run_id: str) -> asyncio.Task[None] | None:
    """A task renewing the run's lease every third of it while the run executes (a server's
    runs; None for a command's). A lease it can no longer renew (another server took the run
    over, or it ended) stops the execution: what is left is no longer this process's."""
    if runs.lease_seconds is None:
        return None
    period = runs.lease_seconds / 3
    running = asyncio.current_task()

    async def renew() -> None:
        while True:
            await asyncio.sleep(period)
            try:
                held = await asyncio.to_thread(runs.renew, run_id)
            except StoreError:
                log.warning("run %s: cannot renew its lease; trying again", run_id)
                continue
            if held:
                continue
            record = await asyncio.to_thread(runs.get, run_id)
            if record.state == "running" and running is not None:  # another server's now
                log.warning("run %s: taken over by %s; this server stops it", run_id, record.owner)
                running.cancel()
            return  # else it ended: the execution sees that itself

    return asyncio.get_running_loop().create_task(renew())


async def execute_run(
    runs: RunStore,
    kb: KnowledgeBase,
    run_id: str,
    *,
    policy: AppPolicy | None = None,
    limits: RunLimits | None = None,
    plan: RunPlan | None = None,
    progress: Progress | None = None,
    also: MemorySink | None = None,
    executor: Executor | None = None,
    make: Awaitable[Any] | None = None,
    stop: MakingStop | None = None,
) -> None:
    """Take a pending run to done, failed or cancelled. ``plan`` is the run's plan when the
    caller built it already (the command line: it stays the caller's to close); else it is
    built from the stored config and rows. An ``asyncio.CancelledError`` (a
    cancel request) leaves the run cancelled and resumable; a state set meanwhile by someone
    else (a cancel, an interrupt) is never overwritten. The service gives its app ``policy``
    and its ``limits`` (past them the run fails, resumable); the command line runs apps
    without a policy and runs without limits. ``also`` keeps the rows stored by this
    execution (for a report made from them); ``executor`` scores them elsewhere (a cluster).

    ``make``: what makes the new run ``run_id`` (stores its dataset, writes its record), not
    yet awaited; ``plan`` is then required. The rows are scored while it runs (storing a
    dataset mostly waits on the database) and kept once the run is made and started; a
    failure making it is raised and the rows scored meanwhile are dropped; a cancel while it
    runs waits for it, then leaves the run cancelled and resumable. ``stop`` is then required:
    ``make`` tells it once it has made the run (``MakingStop.made``), and whichever of the two
    comes second does that in a thread, so that a second cancel (a second Ctrl-C, which ends
    the wait) cannot leave the run pending."""
    limits = limits or RunLimits()
    if make is not None:
        await _execute_making(runs, kb, run_id, make, limits, plan, progress, also, executor, stop)
        return
    if not await _start(runs, run_id):
        return  # cancelled before a worker got to it
    work = _execute(runs, kb, run_id, policy, limits, plan, progress, also, executor)
    await _settled(runs, run_id, work)


async def _execute_making(
    runs: RunStore,
    kb: KnowledgeBase,
    run_id: str,
    make: Awaitable[Any],
    limits: RunLimits,
    plan: RunPlan | None,
    progress: Progress | None,
    also: MemorySink | None,
    executor: Executor | None,
    stop: MakingStop | None,
) -> None:
    """``execute_run`` of a run that ``make`` makes: scoring starts now, keeping once the
    run is made and started."""
    if plan is None or stop is None:
        if inspect.iscoroutine(make):
            make.close()
        raise ValueError("a run being made is executed with its plan and its stop")
    making = RunMaking()
    work = asyncio.ensure_future(
        _execute(runs, kb, run_id, None, limits, plan, progress, also, executor, making)
    )
    made = asyncio.ensure_future(make)
    handed = False
    try:
        try:
            await asyncio.shield(made)
        except asyncio.CancelledError:  # stopped while the run was being made
            if stop.stop():  # made already: left cancelled on a thread a new cancel won't end
                loop = asyncio.get_running_loop()
                await asyncio.shield(loop.run_in_executor(None, leave_cancelled, runs, run_id))
            else:  # the thread making it leaves it cancelled; its transaction ends first
                await asyncio.wait([made])
                if not made.cancelled() and made.exception() is not None:
                    log.warning("run %s: stopped, then not made: %r", run_id, made.exception())
            raise
        if not await _start(runs, run_id):  # cancelled before it started
            return
        making.settle(True)
        handed = True
        await _settled(runs, run_id, work)
    finally:
        if not handed:  # the scored rows go nowhere: the work stops, keeping nothing
            making.settle(False)
            work.cancel()
            for failed in await asyncio.gather(work, return_exceptions=True):
                if isinstance(failed, Exception):  # not a cancel: say what it was
                    log.warning("run %s: scoring failed while it was made: %r", run_id, failed)


class MakingStop:
    """A stop of an evaluation while its new run is made (its dataset stored and its record
    written, in a thread), told between that thread and the event loop: whichever of them
    comes second leaves the run cancelled and resumable (``leave_cancelled``), on a thread,
    which a second stop (a second Ctrl-C, ending the loop's wait) does not end. A run being
    started (``_start``) is told the same way."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._made = False

    def made(self) -> bool:
        """The making thread, its run made: whether the evaluation was stopped meanwhile
        (the thread then leaves the run cancelled)."""
        with self._lock:
            self._made = True
            return self._stopped

    def stop(self) -> bool:
        """The event loop, stopped: whether the run was made already (the loop then leaves
        it cancelled)."""
        with self._lock:
            self._stopped = True
            return self._made


def leave_cancelled(runs: RunStore, run_id: str, *, started: bool = False) -> None:
    """A new run stopped before it ran: started (unless it was, ``started``) and finished
    cancelled, so resumable; nothing when it is no longer pending. A failure is logged, not
    raised: whoever stopped the run may not be waiting any more."""
    try:
        if started or runs.start(run_id):
            runs.finish(run_id, "cancelled")
    except RagmeterError as exc:
        log.warning(
            "run %s was stopped before it ran and could not be left cancelled (%s): "
            "'ragmeter runs cancel %s' then 'ragmeter runs resume %s' finish it",
            run_id,
            exc,
            run_id,
            run_id,
        )


async def _start(runs: RunStore, run_id: str) -> bool:
    """``runs.start`` off the event loop. A cancel meanwhile does not wait for it: whichever
    of the starting thread and the cancel comes second (``MakingStop``) finishes a run it
    started cancelled (resumable), on a thread, which a second cancel does not end; never
    running with no one running it. (A start still queued for a thread when the event loop
    closes is dropped with it, and the run stays pending, as before any start.)"""
    stop = MakingStop()
    started: list[bool] = []

    def start() -> bool:
        try:
            started.append(runs.start(run_id))
        finally:
            if stop.made() and started and started[0]:  # cancelled meanwhile: left here
                leave_cancelled(runs, run_id, started=True)
        return started[0]

    task = asyncio.ensure_future(asyncio.to_thread(start))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(functools.partial(_start_failed, run_id))
        if stop.stop() and started and started[0]:  # started already: left on a thread
            loop = asyncio.get_running_loop()
            run = functools.partial(leave_cancelled, runs, run_id, started=True)
            await asyncio.shield(loop.run_in_executor(None, run))
        raise


def _start_failed(run_id: str, task: asyncio.Future[bool]) -> None:
    """A start nobody waits for any more (its evaluation was stopped) that failed: said in
    the log, as the run stays pending."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("run %s: stopped, and its start failed: %r", run_id, task.exception())


async def _settled(runs: RunStore, run_id: str, work: Awaitable[None]) -> None:
    """Await ``work``, the execution of the started run ``run_id``, holding its lease; then
    write how it ended."""
    heartbeat = _hold_lease(runs, run_id)
    try:
        await work
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
        record = await asyncio.to_thread(runs.get, run_id)
        if record.done_rows < record.total_rows:  # never "done" with rows missing
            missing = RuntimeError(
                f"the run ended with {record.done_rows} of {record.total_rows} rows stored"
            )
            await _finish(runs, run_id, "failed", _internal(run_id, missing), "internal")
        else:
            await _finish(runs, run_id, "done")
    finally:
        if heartbeat is not None:
            heartbeat.cancel()
