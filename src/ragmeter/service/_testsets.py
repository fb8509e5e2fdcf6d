"""Test set generations the service runs, one thread each, shown like runs: state, progress
(accepted of size), gate counts and cost; each row is kept in a named dataset as it passes."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from ragmeter.errors import ConfigError, LimitError, NotFoundError, RagmeterError, clip, redact
from ragmeter.store.names import check_name
from ragmeter.wire.testsets import TestsetCreate, TestsetJob

if TYPE_CHECKING:
    from ragmeter.apps import AppPolicy
    from ragmeter.config import Settings
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.runs.storage.store import RunStore


class Services(Protocol):
    """What a generation uses of the service's state (``ragmeter.service.state``)."""

    settings: Settings
    kb: KnowledgeBase
    runs: RunStore

    @property
    def app_policy(self) -> AppPolicy: ...


__all__ = ["TestsetJobs"]

#: generations kept in memory for GET (the oldest finished ones are forgotten first)
_KEEP = 200


class TestsetJobs:
    """The process's generations by id."""

    __test__ = False

    def __init__(self) -> None:
        self._jobs: dict[str, TestsetJob] = {}
        self._lock = threading.Lock()

    def get(self, job_id: str) -> TestsetJob:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                raise NotFoundError(f"no test set generation '{clip(job_id)}'")
            return job.model_copy(deep=True)

    def start(self, svc: Services, space: str, body: TestsetCreate) -> TestsetJob:
        """Check the request (space, judge, options) and start generating on a thread."""
        from ragmeter.testsets.config import TestsetConfig, parse_styles

        limit = svc.settings.server.max_rows
        if body.size > limit:
            raise LimitError(
                f"size {body.size} is more than this server generates",
                setting=f"[server] max_rows = {limit}",
            )
        svc.app_policy.check_model(body.judge_model, "judge_model")
        info = svc.kb.space(space)
        if info.chunks == 0:
            raise ConfigError(
                f"space '{info.name}' has no chunks to write questions from; upload documents first"
            )
        config = TestsetConfig.build(
            size=body.size,
            types=body.types if body.types is not None else TestsetConfig(size=1).types,
            language=body.language,
            docs=tuple(body.docs),
            styles=parse_styles(",".join(body.styles)),
            personas=tuple(body.personas),
            seed=body.seed,
            graded=body.graded,
            max_requests=body.max_requests,
            max_tokens=body.max_tokens,
        )
        job_id = uuid.uuid4().hex
        with self._lock:
            running = sum(j.state == "running" for j in self._jobs.values())
            most = svc.settings.server.max_testset_jobs
            if running >= most:
                raise LimitError(
                    f"{running} test set generations are running; try again when one is done",
                    setting=f"[server] max_testset_jobs = {most}",
                    status=429,
                )
            name = body.name or f"testset-{info.name}-{job_id[:8]}"
            name = check_name(name, "dataset")
            dataset = svc.runs.add_dataset([], name=name, source=f"testset of space {info.name}")
            job = TestsetJob(
                id=job_id,
                space=info.name,
                state="running",
                size=body.size,
                dataset_id=dataset.id,
                dataset_name=dataset.name,
            )
            self._forget_old()
            self._jobs[job.id] = job
        thread = threading.Thread(
            target=self._run,
            args=(svc, job.id, info.id, config, body.judge_model, dataset.id),
            name=f"testset-{job.id[:8]}",
            daemon=True,
        )
        thread.start()
        return job

    def _forget_old(self) -> None:
        finished = [k for k, j in self._jobs.items() if j.state != "running"]
        for key in finished[: max(0, len(self._jobs) - _KEEP + 1)]:
            del self._jobs[key]

    def _update(self, job_id: str, **values: Any) -> None:
        with self._lock:
            job = self._jobs[job_id]
            self._jobs[job_id] = job.model_copy(update=values)

    def _run(
        self, svc: Services, job_id: str, space_id: int, config: Any, judge: str, dataset: int
    ) -> None:
        ended: dict[str, Any] = {"state": "done"}
        try:
            asyncio.run(self._generate(svc, job_id, space_id, config, judge, dataset))
        except RagmeterError as exc:
            ended = {"state": "failed", "error": str(exc)}
        except Exception as exc:  # the job's failure, shown by GET
            ended = {"state": "failed", "error": redact(f"{type(exc).__name__}: {exc}")}
        if self.get(job_id).accepted == 0:  # nothing kept: the name is free again
            svc.runs.delete_dataset(dataset)
            ended.update(dataset_id=None, dataset_name=None)
        # one update, once all is settled: whoever sees the end sees its dataset as it stays
        self._update(job_id, **ended)

    async def _generate(
        self,
        svc: Services,
        job_id: str,
        space_id: int,
        config: Any,
        judge_name: str,
        dataset: int,
    ) -> None:
        """Generate, keeping each row in the dataset as it passes (a stopped server loses
        none)."""
        from ragmeter.judge.from_config import judge_from_config
        from ragmeter.knowledge.search import SpaceSearcher
        from ragmeter.testsets.generate import TestsetGenerator

        searcher = SpaceSearcher(svc.kb, space_id)
        judge = judge_from_config(judge_name, settings=svc.settings)
        generator = TestsetGenerator(searcher, judge, config)

        def keep(row: dict[str, Any]) -> None:
            count = svc.runs.append_dataset_rows(dataset, [_checked(row, 0)])
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


def _checked(row: dict[str, Any], index: int) -> dict[str, Any]:
    from ragmeter.datasets.row import row_from_mapping

    return row_from_mapping(row, index, source="testset").to_raw()
