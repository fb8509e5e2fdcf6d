"""Runs on a Ray cluster (``pip install 'ragmeter[ray]'``): the plan's rows go out in batches,
each a Ray task that rebuilds the plan from the run's stored config for its rows, has the
target produce them and the metrics score them (the same code as the local executor), and
returns the scored batch. The driver keeps each batch as it comes back (the store stays its
one source of truth; workers never write), so a driver killed mid-run resumes with only the
rows missing from the store, and a worker killed mid-batch costs that batch, which Ray runs
again (its result is kept once: a task's result is returned once).

Judge requests of every worker go through one permit actor per model (``JudgePermits``), so
the cluster together never has more than the model's ``max_concurrency`` requests in flight
nor, where the model has ``requests_per_minute``, more than that in any minute. The actor is
restarted by Ray if it dies; a restarted actor first waits out the judge's timeout before it
hands out permits (the requests in flight under the old one's permits, unknown to it, end by
then). A model's ``requests_per_minute`` is also counted in the store, as for every process
sharing it (``judge._rate``), so a restarted actor's empty minute never lets more through.

``ray`` is imported by this module only: it is loaded when the Ray executor is chosen."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import ray

from ragmeter.apps import AppPolicy
from ragmeter.config import ExecutorConfig, Settings
from ragmeter.datasets import Dataset, DatasetLimits
from ragmeter.errors import ConfigError
from ragmeter.metrics import LLMEvaluationMetric
from ragmeter.runs.execution.executor import BATCH_ROWS, Progress, _context, _score_batch
from ragmeter.runs.execution.sinks import ScoredBatch
from ragmeter.runs.planning.config import EvaluationConfig
from ragmeter.runs.planning.plan import RunPlan, build_plan
from ragmeter.runs.planning.scoring import usage_since, usage_snapshot
from ragmeter.runs.planning.targets import AppTarget
from ragmeter.runs.storage.store import add_usage

__all__ = ["JudgePermits", "RayExecutor", "connect"]

#: Ray runs a batch whose worker died this many more times before the run fails
TASK_RETRIES = 3
#: the window a requests-per-minute limit counts in
WINDOW_S = 60.0
#: the Ray namespace of the permit actors, so every driver (servers, commands) shares them
NAMESPACE = "ragmeter"
#: connections tried through Ray Client whose server process died at its start
CLIENT_ATTEMPTS = 3
#: a permit's lease past the judge's timeout
LEASE_MARGIN_S = 1.0


@ray.remote(max_restarts=-1, max_task_retries=-1, num_cpus=0)
class JudgePermits:
    """One model's permits for the whole cluster: at most ``concurrency`` held at once and,
    with ``per_minute``, at most that many taken in any 60 s. A permit is a lease of the
    judge's timeout (plus a second): a request is over by then, so a permit its worker never
    gave back (the worker was killed, the request failed) is free again after it. A
    restarted actor waits as long before its first permit: the dead one's are unknown to it."""

    def __init__(self, concurrency: int, per_minute: int | None, timeout_s: float) -> None:
        self.concurrency = concurrency
        self.per_minute = per_minute
        self.lease_s = timeout_s + LEASE_MARGIN_S
        #: the permits held: ticket -> when its lease ends
        self.held: dict[str, float] = {}
        self.taken: collections.deque[float] = collections.deque()
        self.most_held = 0
        self.wake = asyncio.Condition()
        self.incarnation = uuid.uuid4().hex
        self.count = 0
        restarted = ray.get_runtime_context().was_current_actor_reconstructed
        self.opens_at = time.monotonic() + (self.lease_s if restarted else 0.0)

    def _wait(self) -> float:
        """Seconds until a permit may be taken (0: now)."""
        now = time.monotonic()
        if now < self.opens_at:
            return self.opens_at - now
        for ticket in [t for t, ends in self.held.items() if ends <= now]:
            del self.held[ticket]  # its request is over, its worker gone or failing
        while self.taken and self.taken[0] <= now - WINDOW_S:
            self.taken.popleft()
        if self.per_minute is not None and len(self.taken) >= self.per_minute:
            return self.taken[0] + WINDOW_S - now
        if len(self.held) < self.concurrency:
            return 0.0
        return min(self.held.values()) - now

    async def acquire(self) -> str:
        """Wait for a permit; its ticket, for ``release``."""
        async with self.wake:
            while (wait := self._wait()) > 0:
                # wait releases the lock: releases come in meanwhile and wake one waiter
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(wait, 0.5)):
                        await self.wake.wait()
            self.count += 1
            ticket = f"{self.incarnation}-{self.count}"
            now = time.monotonic()
            self.held[ticket] = now + self.lease_s
            self.most_held = max(self.most_held, len(self.held))
            self.taken.append(now)
            return ticket

    async def release(self, ticket: str) -> None:
        """Give back a permit (one of a dead incarnation, or expired, is not held: no-op)."""
        async with self.wake:
            if self.held.pop(ticket, None) is not None:
                self.wake.notify()

    def stats(self) -> dict[str, int]:
        """Permits held now and the most ever held at once (by this incarnation)."""
        return {"held": len(self.held), "most_held": self.most_held}


class _PermitGate:
    """A judge engine's ``RequestGate`` in a worker: a cluster permit around each request."""

    def __init__(self, permits: Any) -> None:
        self.permits = permits

    async def before(self, messages: list[dict[str, str]]) -> str:
        ticket: str = await self.permits.acquire.remote()
        return ticket

    async def after(self, ticket: Any, tokens: int) -> None:
        await self.permits.release.remote(ticket)


@dataclass(frozen=True)
class _Job:
    """What every batch of a run needs to rebuild its plan in a worker."""

    spec: dict[str, Any]
    settings: Settings
    store_url: str | None
    policy: AppPolicy | None
    permits: Any


def _plan_for(job: _Job, rows: Dataset) -> RunPlan:
    """The run's plan for ``rows``, built in the worker from its stored config."""
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.store.db import open_store

    config = EvaluationConfig.from_stored(job.spec)
    kb = None
    if job.store_url is not None:
        kb = KnowledgeBase(open_store(job.store_url), job.settings)
    elif config.target.kind != "none":
        kb = KnowledgeBase(settings=job.settings)
    limits = DatasetLimits(max_tool_calls=None)
    source = rows.source or "datasets"
    return build_plan(
        config, rows, kb, source=source, policy=job.policy, limits=limits, settings=job.settings
    )


async def _score_here(
    job: _Job, rows: Dataset, indices: list[int]
) -> tuple[ScoredBatch, dict[str, float]]:
    from ragmeter.metrics.context import EmbeddingBatcher

    plan = _plan_for(job, rows)
    try:
        if job.permits is not None and hasattr(plan.judge, "gate"):
            plan.judge.gate = _PermitGate(job.permits)
        before = usage_snapshot(plan.judge)
        batcher = EmbeddingBatcher(plan.embedder)
        local = list(range(len(rows)))
        batch = await _score_batch(plan, local, batcher, Progress())
        usage = usage_since(plan.judge, before, _context(plan, batcher))
    finally:
        await plan.aclose()
    return ScoredBatch(indices, batch.rows, batch.columns, stored=batch.stored), usage


@ray.remote(max_retries=TASK_RETRIES)
def _score_remote(
    job: _Job, rows: Dataset, indices: list[int]
) -> tuple[ScoredBatch, dict[str, float]]:
    """One batch scored in a Ray worker, and what it took."""
    return asyncio.run(_score_here(job, rows, indices))


def connect(address: str | None) -> None:
    """Join the Ray cluster at ``address`` (None: a new local one; ``auto``: the one this
    machine is part of; ``HOST:PORT``; ``ray://HOST:PORT``: through Ray Client) unless joined
    already. A cluster with token authentication takes the token Ray's variables give
    (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``); Ray sends it on
    ``auto`` by itself and on an explicit address only with ``RAY_AUTH_MODE=token``."""
    if ray.is_initialized():
        return
    try:
        if address is not None and address.startswith("ray://"):
            _join_client(address)
        else:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError, ray.exceptions.AuthenticationError) as exc:
        where = address or "a new local cluster"
        hint = ""
        if address is not None:
            hint = (
                " (a cluster started with token authentication also needs RAY_AUTH_MODE=token"
                " and its token in RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH here)"
            )
        raise ConfigError(f"cannot reach the Ray cluster at {where}: {exc}{hint}") from exc


def _join_client(address: str) -> None:
    """Ray Client: the cluster starts a server process for this connection, which runs the
    driver there (no dashboard here). That process sometimes dies as it starts (a race in
    Ray's proxier, ray-project/ray#63202: "Initialization failure from server"); a new
    connection gets a new one, so that failure is tried again, twice."""
    for attempt in range(CLIENT_ATTEMPTS):
        try:
            ray.init(address=address, log_to_driver=False)
            return
        except ConnectionAbortedError:
            with contextlib.suppress(Exception):
                ray.shutdown()
            if attempt == CLIENT_ATTEMPTS - 1:
                raise
            time.sleep(1.0)


class RayExecutor:
    """Scores a plan's rows in Ray tasks of ``batch`` rows (default: ``concurrency`` rows where
    a judge or an app answers, else 10,000), at most ``max_in_flight`` at once."""

    def __init__(
        self,
        settings: Settings,
        store_url: str | None = None,
        *,
        address: str | None = None,
        max_in_flight: int | None = None,
        batch: int | None = None,
        policy: AppPolicy | None = None,
    ) -> None:
        self.settings = settings
        self.store_url = store_url
        self.policy = policy
        self.address = address
        self.max_in_flight = max_in_flight
        self.batch = batch
        self.permits: Any = None
        self._usage: dict[str, float] = {}

    def join(self) -> None:
        """Join the cluster now (else the first batch does): a ConfigError if out of reach."""
        connect(self.address)

    def usage(self) -> dict[str, float]:
        """What the batches back so far took (judge requests, tokens, embeddings)."""
        return dict(self._usage)

    @classmethod
    def from_config(
        cls,
        settings: Settings,
        store_url: str | None,
        config: ExecutorConfig,
        policy: AppPolicy | None = None,
    ) -> RayExecutor:
        return cls(
            settings,
            store_url,
            address=config.address,
            max_in_flight=config.max_in_flight,
            batch=config.batch_rows,
            policy=policy,
        )

    def _batch_rows(self, plan: RunPlan) -> int:
        if self.batch is not None:
            return self.batch
        judged = any(isinstance(m, LLMEvaluationMetric) for m in plan.metrics)
        if judged or isinstance(plan.target, AppTarget):
            return max(1, plan.config.concurrency)
        return BATCH_ROWS

    def _permits_for(self, plan: RunPlan) -> Any:
        """The cluster's permit actor for the plan's judge (one per model, named by it)."""
        settings = getattr(plan.judge, "settings", None)
        if settings is None:
            return None
        name = f"ragmeter-judge {settings.base_url.rstrip('/')} {settings.model}"
        return JudgePermits.options(  # type: ignore[attr-defined]
            name=name, namespace=NAMESPACE, get_if_exists=True, lifetime="detached"
        ).remote(settings.max_concurrency, settings.requests_per_minute, float(settings.timeout))

    async def scored(self, plan: RunPlan, todo: Sequence[int]) -> AsyncIterator[ScoredBatch]:
        """Batches of ``todo`` scored on the cluster, as they finish; cancelling this stops
        the cluster's tasks of the run."""
        if plan.config.objects:
            parts = ", ".join(sorted(plan.config.objects))
            raise ConfigError(
                f"the Ray executor rebuilds the evaluation from names; {parts} given as "
                "Python objects cannot be sent to the cluster (give them by name)"
            )
        await asyncio.to_thread(connect, self.address)
        self._usage = {}
        self.permits = self._permits_for(plan)
        job = _Job(plan.config.stored(), self.settings, self.store_url, self.policy, self.permits)
        size = self._batch_rows(plan)
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        in_flight = self.max_in_flight or max(1, 2 * cpus)
        pending = [list(todo[i : i + size]) for i in range(0, len(todo), size)]
        running: dict[Any, list[int]] = {}
        try:
            while pending or running:
                while pending and len(running) < in_flight:
                    indices = pending.pop(0)
                    ref = _score_remote.remote(job, plan.dataset.take(indices), indices)
                    running[ref] = indices
                done, _ = await asyncio.to_thread(
                    ray.wait, list(running), num_returns=1, timeout=1.0
                )
                for ref in done:
                    running.pop(ref)
                    # ray.get in a thread: the same for a driver and a Ray Client
                    batch, usage = await asyncio.to_thread(ray.get, ref)
                    self._usage = add_usage(self._usage, usage)
                    yield batch
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
