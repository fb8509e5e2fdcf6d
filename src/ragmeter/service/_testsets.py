"""Test set generations the service runs, one thread each, shown like runs: state, progress
(accepted of size), gate counts and cost; each row is kept in a named dataset as it passes.
A request is checked whole before its 202; a generation has a budget (the server's default
when it names none), can be cancelled, and always ends: its dataset cannot be deleted under
it, and one that vanished anyway (another process) ends it failed. Generations live in the
store (``runs.storage.testset_jobs``), so every server sharing it shows, counts and cancels
them; the server generating one looks for a cancel asked elsewhere every ``_POLL_S``."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from ragmeter._public import internal_reference
from ragmeter.errors import (
    ConfigError,
    ConflictError,
    LimitError,
    NotFoundError,
    RagmeterError,
    clip,
)
from ragmeter.runs.storage.testset_jobs import TestsetJobStore
from ragmeter.store.actor import current_actor
from ragmeter.store.names import check_name
from ragmeter.wire.testsets import TestsetCreate, TestsetJob

if TYPE_CHECKING:
    from ragmeter.apps import AppPolicy
    from ragmeter.config import Settings
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.runs.storage.store import RunStore
    from ragmeter.wire.knowledge import SpaceInfo


class Services(Protocol):
    """What a generation uses of the service's state (``ragmeter.service.state``)."""

    settings: Settings
    kb: KnowledgeBase
    runs: RunStore

    @property
    def app_policy(self) -> AppPolicy: ...


__all__ = ["TestsetJobs"]

#: seconds between a generating server's looks for a cancel asked on another server
_POLL_S = 1.0


class TestsetJobs:
    """The generations of the servers sharing the store; those under way in this process
    with their tasks."""

    __test__ = False

    def __init__(self, store: TestsetJobStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        #: the loop and task of each generation under way here (to cancel it from any thread)
        self._tasks: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = {}
        self._cancelled: set[str] = set()

    def get(self, job_id: str) -> TestsetJob:
        return self.store.get(job_id)

    def creators(self, job_id: str) -> list[str | None]:
        """Who started the generation ``job_id`` (None: no user); empty when there is none."""
        try:
            return [self.store.get(job_id).created_by]
        except NotFoundError:
            return []

    def start(self, svc: Services, space: str, body: TestsetCreate) -> TestsetJob:
        """Check the whole request (space, judge, documents, options, budget) and start
        generating on a thread: nothing is refused after the 202."""
        svc.app_policy.check_model(body.judge_model, "judge_model")
        info = svc.kb.space(space)
        if info.chunks == 0:
            raise ConfigError(
                f"space '{info.name}' has no chunks to write questions from; upload documents first"
            )
        config = _config(svc, info, body)
        most = svc.settings.server.max_testset_jobs
        self.store.check_room(most)  # before making its dataset; ``add`` checks again
        job_id = uuid.uuid4().hex
        name = check_name(body.name or f"testset-{info.name}-{job_id[:8]}", "dataset")
        dataset = svc.runs.add_dataset([], name=name, source=f"testset of space {info.name}")
        job = TestsetJob(
            id=job_id,
            max_requests=config.max_requests,
            max_tokens=config.max_tokens,
            space=info.name,
            state="running",
            size=body.size,
            dataset_id=dataset.id,
            dataset_name=dataset.name,
            created_by=current_actor(),
        )
        try:
            self.store.add(job, most)
        except RagmeterError:
            svc.runs.delete_dataset(dataset.id)  # refused: the name is free again
            raise
        thread = threading.Thread(
            target=self._run,
            args=(svc, job.id, info.id, config, body.judge_model, dataset.id),
            name=f"testset-{job.id[:8]}",
            daemon=True,
        )
        thread.start()
        return job

    def _update(self, job_id: str, **values: Any) -> None:
        self.store.update(job_id, **values)

    def get_running(self, dataset_id: int, name: str | None) -> TestsetJob | None:
        """The running generation writing into the dataset ``dataset_id`` (or one named
        ``name``), if any, on any server sharing the store."""
        return self.store.running_into(dataset_id, name)

    def check_free(self, dataset_id: int, name: str | None) -> None:
        """ConflictError when a running generation writes into the dataset: deleting it
        under the generation would leave the generation nowhere to keep its rows."""
        job = self.get_running(dataset_id, name)
        if job is not None:
            raise ConflictError(
                f"dataset '{clip(name or str(dataset_id))}' is being written by test set "
                f"generation '{job.id}'; cancel it first (POST /knowledge/testsets/{job.id}/cancel)"
            )

    def cancel(self, job_id: str) -> TestsetJob:
        """Stop a running generation: the rows kept so far stay in its dataset, and it ends
        ``cancelled``. ConflictError for a finished one."""
        self.store.ask_cancel(job_id)  # the server generating it stops at its next look
        with self._lock:
            self._cancelled.add(job_id)
            task = self._tasks.get(job_id)
        if task is not None:  # generating here: at once
            loop, running = task
            loop.call_soon_threadsafe(running.cancel)
        return self.get(job_id)

    def _run(
        self, svc: Services, job_id: str, space_id: int, config: Any, judge: str, dataset: int
    ) -> None:
        ended: dict[str, Any] = {"state": "done"}
        try:
            rows = self._generate_rows(svc, job_id, space_id, config, judge, dataset)
            asyncio.run(self._generate(job_id, rows))
        except asyncio.CancelledError:
            ended = {"state": "cancelled", "stopped": "cancelled"}
        except RagmeterError as exc:
            ended = {"state": "failed", "error": str(exc)}
        except Exception as exc:  # unexpected: logged in full, GET shows a reference
            told = internal_reference(exc, f" in test set generation {job_id}")
            ended = {"state": "failed", "error": told}
        finally:  # whatever happened, the generation ends and its slot is free
            try:
                if self.get(job_id).accepted == 0:  # nothing kept: the name is free again
                    svc.runs.delete_dataset(dataset)
                    ended.update(dataset_id=None, dataset_name=None)
            except NotFoundError:  # its dataset is gone already
                ended.update(dataset_id=None, dataset_name=None)
            finally:
                with self._lock:
                    self._tasks.pop(job_id, None)
                    self._cancelled.discard(job_id)
                # one update, once all is settled: whoever sees the end sees its dataset
                self._update(job_id, **ended)

    async def _generate(self, job_id: str, rows: Coroutine[Any, Any, None]) -> None:
        """Generate (``rows``: ``_generate_rows``), keeping each row in the dataset as it
        passes (a stopped server loses none), cancellable from any thread or server."""
        with self._lock:
            if job_id in self._cancelled:  # cancelled before it began
                rows.close()
                raise asyncio.CancelledError
            task = asyncio.current_task()
            if task is not None:
                self._tasks[job_id] = (asyncio.get_running_loop(), task)
        watcher = asyncio.create_task(self._watch(job_id, task)) if task else None
        try:
            await rows
        finally:
            if watcher is not None:
                watcher.cancel()

    async def _watch(self, job_id: str, task: asyncio.Task[Any]) -> None:
        """Renew the generation's lease while it runs and stop it once a cancel is asked on
        any server."""
        while True:
            await asyncio.sleep(_POLL_S)
            if await asyncio.to_thread(self.store.cancel_asked, job_id):
                task.cancel()
                return

    async def _generate_rows(
        self,
        svc: Services,
        job_id: str,
        space_id: int,
        config: Any,
        judge_name: str,
        dataset: int,
    ) -> None:
        from ragmeter.judge.from_config import judge_from_config
        from ragmeter.knowledge.search import SpaceSearcher
        from ragmeter.testsets.generate import TestsetGenerator

        searcher = SpaceSearcher(svc.kb, space_id)
        judge = judge_from_config(judge_name, settings=svc.settings)
        generator = TestsetGenerator(searcher, judge, config)

        def keep(row: dict[str, Any]) -> None:
            try:
                count = svc.runs.append_dataset_rows(dataset, [_checked(row, 0)])
            except NotFoundError:
                raise ConflictError(
                    f"the generation's dataset {dataset} was deleted while it ran; "
                    "its rows are gone"
                ) from None
            self._update(job_id, accepted=count)

        try:
            report = await generator.generate(on_row=keep)
        finally:
            await judge.aclose()
        self._update(
            job_id,
            accepted=report.accepted,
            candidates=report.candidates,
            rejected=dict(report.rejected),
            skipped=dict(report.skipped),
            cost=report.usage.to_dict(),
            stopped=report.stopped,
        )
        if not report.rows:
            raise ConfigError(
                f"no question passed the gates ({report.stopped or 'nothing tried'}); "
                "raise the budget or choose other documents"
            )


def _config(svc: Services, info: SpaceInfo, body: TestsetCreate) -> Any:
    """The generation's config, every option checked (its documents in the space too), with
    the server's default budget for what the request leaves open."""
    from ragmeter.testsets.config import TestsetConfig, parse_styles

    server = svc.settings.server
    if body.size > server.max_rows:
        raise LimitError(
            f"size {body.size} is more than this server generates",
            setting=f"[server] max_rows = {server.max_rows}",
        )
    if body.docs:
        names = [d.name for d in svc.kb.documents(info.id)]
        for name in body.docs:
            try:
                svc.kb.resolve_document(info, name, names)
            except RagmeterError as exc:
                raise ConfigError(f"docs: {exc}") from None
    budget = {
        "max_requests": (body.max_requests, server.testset_requests_per_question),
        "max_tokens": (body.max_tokens, server.testset_tokens_per_question),
    }
    spend: dict[str, int] = {}
    for field, (asked, per_question) in budget.items():
        most = body.size * per_question
        if asked is not None and asked > most:
            name = field.replace("max_", "testset_") + "_per_question"
            raise LimitError(
                f"{field} {asked} is more than this server spends on {body.size} questions "
                f"({most})",
                setting=f"[server] {name} = {per_question}",
            )
        spend[field] = most if asked is None else asked
    return TestsetConfig.build(
        size=body.size,
        types=body.types if body.types is not None else TestsetConfig(size=1).types,
        language=body.language,
        docs=tuple(body.docs),
        styles=parse_styles(",".join(body.styles)),
        personas=tuple(body.personas),
        seed=body.seed,
        graded=body.graded,
        **spend,
    )


def _checked(row: dict[str, Any], index: int) -> dict[str, Any]:
    from ragmeter.datasets.row import row_from_mapping

    return row_from_mapping(row, index, source="testset").to_raw()
