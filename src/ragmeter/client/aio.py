"""``AsyncClient``: the service from async code, every resource as coroutines. This is the one
place the client is written: ``sync.py`` (``Client``) is generated from it by
``python scripts/unasync_client.py`` (``await`` dropped, ``AsyncX`` named ``X``), so edit here
and regenerate."""

from __future__ import annotations

import builtins
import time
from asyncio import sleep
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx

from ragmeter.client import _calls as calls
from ragmeter.client._base import DEFAULT_API_BASE, FINISHED, POOL_LIMITS, ClientBase
from ragmeter.client._calls import Call, RequestLike
from ragmeter.client._errors import ClientError
from ragmeter.config import OnlineRule
from ragmeter.wire.cards import JudgeCardOut
from ragmeter.wire.compare import MetricComparison
from ragmeter.wire.knowledge import AddOut, ChunkInfo, DocumentInfo, HitOut, SpaceInfo
from ragmeter.wire.labels import LabelFormat, LabelIn, LabelOut, LabelsKept
from ragmeter.wire.lineage import RunChanges, RunUpdate
from ragmeter.wire.monitor import AlertEventOut, AlertRuleIn, AlertRuleOut, MonitorOut
from ragmeter.wire.online import OnlineRuleInfo
from ragmeter.wire.pages import Page
from ragmeter.wire.resources import AppOut, DatasetOut, PromptOut, TrecDatasetOut
from ragmeter.wire.review import (
    ReviewCreate,
    ReviewQueueInfo,
    ReviewQueueItems,
    RowLabel,
    RowLabelIn,
)
from ragmeter.wire.rows import RowDetail
from ragmeter.wire.runs import MetricInfo, ResultItem, RunCreated, RunInfo, SceneInfo
from ragmeter.wire.testsets import TestsetCreate, TestsetJob
from ragmeter.wire.traces import (
    TraceDetailOut,
    TraceFlagIn,
    TraceFlagOut,
    TraceOut,
    TracesDatasetIn,
    TracesDatasetOut,
)
from ragmeter.wire.users import AuditEntryOut, UserKeyOut, UserOut

__all__ = [
    "AsyncApps",
    "AsyncClient",
    "AsyncDatasets",
    "AsyncMonitor",
    "AsyncOnline",
    "AsyncPrompts",
    "AsyncRuns",
    "AsyncSpaces",
    "AsyncUsers",
]

T = TypeVar("T")


class AsyncClient(ClientBase):
    """The service's client: ``runs``, ``spaces``, ``prompts``, ``apps``, ``datasets``,
    ``users``, ``online`` (rules), ``monitor``, ``evaluate``, ``scenes``, ``metrics``,
    ``models``, ``whoami``, ``audit`` and production ``traces``;
    ``run_evaluation(client, request)``
    as in DB-GPT. Refusals raise ``ClientError`` (by kind: not found, conflict, auth)."""

    def __init__(
        self,
        api_base: str = DEFAULT_API_BASE,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(api_base, api_key, timeout)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=self._headers,
            timeout=timeout,
            transport=transport,
            limits=POOL_LIMITS,
        )
        self.runs = AsyncRuns(self)
        self.spaces = AsyncSpaces(self)
        self.prompts = AsyncPrompts(self)
        self.apps = AsyncApps(self)
        self.datasets = AsyncDatasets(self)
        self.users = AsyncUsers(self)
        self.online = AsyncOnline(self)
        self.monitor = AsyncMonitor(self)

    async def send(self, call: Call[T]) -> T:
        """Make one call; its parsed ``data``, or the ClientError it failed with."""
        try:
            response = await self._http.request(
                call.method, call.path, **self._request_kwargs(call)
            )
        except httpx.HTTPError as exc:
            raise self._failed(exc) from exc
        return self._answer(call, response)

    async def evaluate(self, request: RequestLike) -> builtins.list[builtins.list[dict[str, Any]]]:
        """``POST /evaluation``: evaluate and wait; one list of metric results per row."""
        return await self.send(calls.evaluation(request))

    async def scenes(self) -> builtins.list[SceneInfo]:
        """The scenes a request's ``scene_key`` may name."""
        return await self.send(calls.scenes())

    async def metrics(self, scene_key: str | None = None) -> builtins.list[MetricInfo]:
        """Metrics a request may name; ``scene_key="recall"`` lists those needing no judge."""
        return await self.send(calls.metrics(scene_key))

    async def models(self) -> builtins.list[str]:
        """Names of the models configured on the server."""
        return [m.name for m in await self.send(calls.models())]

    async def judge_cards(
        self, judge_model: str | None = None, metric: str | None = None, limit: int = 100
    ) -> builtins.list[JudgeCardOut]:
        """Judge cards (``ragmeter judge card``), newest first, of one judge model and
        metric when given."""
        return await self.send(calls.judge_cards(judge_model, metric, limit))

    async def whoami(self) -> UserOut:
        """The user this client's key belongs to, and its role."""
        return await self.send(calls.whoami())

    async def audit(
        self, limit: int = 100, *, before_id: int | None = None, user: str | None = None
    ) -> builtins.list[AuditEntryOut]:
        """The audit log, newest first (admins only): ``limit`` entries older than
        ``before_id`` (the last id of the page before), of one ``user`` if given."""
        return await self.send(calls.audit(limit, before_id, user))

    async def put_labels(
        self,
        labels: Sequence[LabelIn | Mapping[str, Any]],
        *,
        run_id: str | None = None,
        dataset: str | int | None = None,
    ) -> LabelsKept:
        """Keep human labels (each naming its row by ``row_id``, ``query`` or ``row_index``,
        with ``metric``, ``value``, ``comment``) on a run's or a dataset's rows, all or none;
        they are this key's user's (an admin may name another ``reviewer``)."""
        return await self.send(calls.put_labels(labels, run_id, dataset))

    async def labels(
        self,
        *,
        run_id: str | None = None,
        dataset: str | int | None = None,
        metric: str | None = None,
        reviewer: str | None = None,
        offset: int = 0,
        limit: int = 1000,
    ) -> Page[LabelOut]:
        """A page of the human labels of a run's or a dataset's rows."""
        filters = {"metric": metric, "reviewer": reviewer, "offset": offset, "limit": limit}
        return await self.send(calls.labels(run_id, dataset, filters))

    async def export_labels(
        self,
        *,
        run_id: str | None = None,
        dataset: str | int | None = None,
        metric: str | None = None,
        reviewer: str | None = None,
        format: LabelFormat = "jsonl",
    ) -> str:
        """Every human label of a run's or a dataset's rows as a JSONL or CSV text, which
        ``put_labels`` (and ``ragmeter labels import``) reads again."""
        filters = {"metric": metric, "reviewer": reviewer}
        return await self.send(calls.export_labels(run_id, dataset, filters, format))

    async def traces(self, *, offset: int = 0, limit: int = 50, **filters: Any) -> Page[TraceOut]:
        """A page of production traces, newest first, with their row fields and scores;
        ``filters`` as the list takes them (``service``, ``name``, ``status``, ``complete``,
        ``since_ns``, ``until_ns``, ``metric`` with ``below``, ``text``, ``session_id``,
        ``user_id``, ``flagged``, ``flag``)."""
        return await self.send(calls.traces(filters, offset, limit))

    async def trace(self, trace_id: str) -> TraceDetailOut:
        """A trace with its spans in tree order and its scores."""
        return await self.send(calls.trace(trace_id))

    async def traces_to_dataset(
        self,
        name: str,
        *,
        trace_ids: Sequence[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = 1000,
    ) -> TracesDatasetOut:
        """Save the traces named, or those ``filters`` takes (oldest first, at most
        ``limit``), as dataset ``name``'s next version; each row's metadata names its
        trace."""
        body = TracesDatasetIn.model_validate(
            {
                "name": name,
                "trace_ids": None if trace_ids is None else list(trace_ids),
                "filters": None if filters is None else dict(filters),
                "limit": limit,
            }
        )
        return await self.send(calls.traces_to_dataset(body))

    async def flag_trace(self, trace_id: str, label: str, note: str | None = None) -> TraceFlagOut:
        """Flag a production trace as yourself (a new flag replaces yours): ``label`` one of
        ``wrong``, ``good_example``, ``needs_review``, ``other``, and why (``note``)."""
        body = TraceFlagIn.model_validate({"label": label, "note": note})
        return await self.send(calls.flag_trace(trace_id, body))

    async def unflag_trace(self, trace_id: str, *, user: str | None = None) -> bool:
        """Remove your flag on a trace (an admin removes ``user``'s); whether there was one."""
        return await self.send(calls.unflag_trace(trace_id, user))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


class AsyncRuns:
    """Runs: queued, watched, read a page at a time, compared, cancelled and resumed."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def create(self, request: RequestLike) -> RunCreated:
        """Queue a run; it is evaluated in the background."""
        return await self._c.send(calls.create_run(request))

    async def get(self, run_id: str) -> RunInfo:
        return await self._c.send(calls.get_run(run_id))

    async def list(
        self,
        offset: int = 0,
        limit: int = 50,
        state: str | None = None,
        *,
        tags: Sequence[str] = (),
        archived: Literal["no", "yes", "all"] = "no",
    ) -> Page[RunInfo]:
        """Runs, newest first: of a ``state``, with every one of ``tags``; archived ones
        only with ``archived="yes"`` (``"all"``: both)."""
        return await self._c.send(calls.list_runs(offset, limit, state, tags, archived))

    async def update(
        self,
        run_id: str,
        *,
        name: str | None = None,
        note: str | None = None,
        archived: bool | None = None,
        add_tags: Sequence[str] = (),
        remove_tags: Sequence[str] = (),
    ) -> RunInfo:
        """Rename a run, change its note, (un)archive it, add or remove tags."""
        update = RunUpdate(
            name=name, note=note, archived=archived,
            add_tags=list(add_tags), remove_tags=list(remove_tags),
        )  # fmt: skip
        return await self._c.send(calls.update_run(run_id, update))

    async def delete(self, run_id: str) -> RunInfo:
        """Delete a finished, failed or cancelled run with its results."""
        return await self._c.send(calls.delete_run(run_id))

    async def changes(self, run_id: str, other_id: str) -> RunChanges:
        """What differs between two runs: their lineage, and their datasets' rows."""
        return await self._c.send(calls.run_changes(run_id, other_id))

    async def results_page(
        self, run_id: str, offset: int = 0, limit: int = 100
    ) -> Page[ResultItem]:
        return await self._c.send(calls.results_page(run_id, offset, limit))

    async def row(self, run_id: str, row_index: int) -> RowDetail:
        """One row of a run in full: every metric's result with the judge's reasoning, the
        retrieved contexts with relevance, an agent row's trajectory."""
        return await self._c.send(calls.run_row(run_id, row_index))

    async def results(self, run_id: str, page_size: int = 500) -> AsyncIterator[ResultItem]:
        """Every stored result of a run, fetched a page at a time."""
        offset = 0
        while True:
            page = await self.results_page(run_id, offset, page_size)
            for item in page.items:
                yield item
            offset += len(page.items)
            if not page.items or offset >= page.total:
                return

    async def wait(
        self,
        run_id: str,
        on_progress: Callable[[RunInfo], None] | None = None,
        *,
        poll: float = 0.5,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> RunInfo:
        """Poll until the run is done, failed or cancelled; ``on_progress`` sees every status
        whose progress changed. Returns the last status (check its ``state``); a ClientError
        if it still runs after ``timeout`` seconds (the same arguments in both clients)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: tuple[str, int] | None = None
        while True:
            info = await self.get(run_id)
            seen = (info.state, info.progress.get("done", 0))
            if on_progress is not None and seen != last:
                on_progress(info)
            last = seen
            if info.state in FINISHED:
                return info
            if deadline is not None and time.monotonic() > deadline:
                raise ClientError(f"run '{run_id}' still {info.state} after {timeout:g} s")
            await sleep(poll)

    async def compare(
        self,
        run_id: str,
        other_id: str,
        *,
        alpha: float | None = None,
        margin: float | None = None,
    ) -> builtins.list[MetricComparison]:
        """Per metric: both means, the paired difference (other - base) with its 95%
        family-wise CI and p-value (both Bonferroni-corrected across the metrics) and the
        verdict at ``alpha`` (the server's default 0.05 when not given): better, worse,
        no_evidence, or equivalent when ``margin`` (in the metrics' units) is given and the
        interval lies inside +-margin."""
        return await self._c.send(calls.compare_runs(run_id, other_id, alpha, margin))

    async def cancel(self, run_id: str) -> RunInfo:
        return await self._c.send(calls.cancel_run(run_id))

    async def resume(self, run_id: str, *, retry_failed: bool = False) -> RunInfo:
        """Finish a stopped run; ``retry_failed`` also redoes rows with a null score."""
        return await self._c.send(calls.resume_run(run_id, retry_failed))

    async def create_review(
        self,
        run_id: str,
        metric: str,
        *,
        rule: Literal["random", "stratified", "disagreement", "threshold", "failures"] = "random",
        count: int = 20,
        reviewers: Sequence[str] | None = None,
        k: int = 1,
        seed: int = 0,
        threshold: float | None = None,
        strata: int = 5,
    ) -> ReviewQueueInfo:
        """A review queue of a run (its owner's or an admin's): rows of ``metric`` picked by
        ``rule``, ``count`` per reviewer, each row shown to ``k`` of ``reviewers`` (users
        who may label; none: the caller), each with its inclusion probability."""
        body = ReviewCreate(
            metric=metric, rule=rule, count=count,
            reviewers=None if reviewers is None else builtins.list(reviewers),
            k=k, seed=seed, threshold=threshold, strata=strata,
        )  # fmt: skip
        return await self._c.send(calls.create_review(run_id, body))

    async def reviews(self, run_id: str) -> builtins.list[ReviewQueueInfo]:
        """A run's review queues with each reviewer's progress (labelled of assigned)."""
        return await self._c.send(calls.reviews(run_id))

    async def review(self, run_id: str, queue_id: int) -> ReviewQueueItems:
        """The caller's rows of a review queue in order, each with whether it is labelled."""
        return await self._c.send(calls.review_items(run_id, queue_id))

    async def label_row(
        self, run_id: str, row_index: int, metric: str, value: float, comment: str = ""
    ) -> RowLabel:
        """The caller's label of one row on ``metric`` (replacing theirs): ``value`` on the
        metric's scale, 1/0 for pass/fail."""
        body = RowLabelIn(metric=metric, value=value, comment=comment)
        return await self._c.send(calls.put_row_label(run_id, row_index, body))

    async def row_labels(self, run_id: str, row_index: int) -> builtins.list[RowLabel]:
        """The caller's own labels of one row."""
        return await self._c.send(calls.row_labels(run_id, row_index))

    async def unlabel_row(self, run_id: str, row_index: int, metric: str) -> bool:
        """Remove the caller's own label of one row on ``metric``; whether there was one."""
        return await self._c.send(calls.delete_row_label(run_id, row_index, metric))


class AsyncSpaces:
    """Knowledge spaces: their documents, chunks and retrieval."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def create(
        self, name: str, description: str = "", embedder: str | None = None
    ) -> SpaceInfo:
        return await self._c.send(calls.create_space(name, description, embedder))

    async def list(self, offset: int = 0, limit: int = 1000) -> builtins.list[SpaceInfo]:
        """At most ``limit`` (1 to 1,000) from ``offset``, by name."""
        return await self._c.send(calls.spaces(offset, limit))

    async def get(self, space: str | int) -> SpaceInfo:
        return await self._c.send(calls.space(space))

    async def delete(self, space: str | int) -> SpaceInfo:
        return await self._c.send(calls.delete_space(space))

    async def upload(
        self,
        space: str | int,
        paths: Sequence[str | Path],
        names: Sequence[str] | None = None,
    ) -> AddOut:
        """Add files; ``names`` (relative paths) default to the files' own names."""
        return await self._c.send(calls.upload_documents(space, paths, names))

    async def documents(
        self, space: str | int, offset: int = 0, limit: int = 1000
    ) -> builtins.list[DocumentInfo]:
        """At most ``limit`` (1 to 1,000) of the space's documents from ``offset``, by name."""
        return await self._c.send(calls.documents(space, offset, limit))

    async def chunks(
        self, space: str | int, doc_name: str | None = None, offset: int = 0, limit: int = 100
    ) -> Page[ChunkInfo]:
        return await self._c.send(calls.chunks(space, doc_name, offset, limit))

    async def retrieve(
        self,
        space: str | int,
        query: str,
        top_k: int = 5,
        score_threshold: float | None = None,
        retriever: str = "vector",
    ) -> builtins.list[HitOut]:
        return await self._c.send(calls.retrieve(space, query, top_k, score_threshold, retriever))

    async def generate_testset(
        self, space: str | int, size: int, judge_model: str, **options: Any
    ) -> TestsetJob:
        """Start generating ``size`` questions from the space's chunks with ``judge_model`` (a
        model the server declares); ``options`` are ``TestsetCreate``'s (types, language, docs,
        styles, seed, max_requests, max_tokens, name). Follow it with ``testset`` or
        ``wait_testset``; its rows become the dataset ``dataset_id``."""
        body = TestsetCreate(size=size, judge_model=judge_model, **options)
        return await self._c.send(calls.create_testset(space, body))

    async def testset(self, job_id: str) -> TestsetJob:
        return await self._c.send(calls.testset(job_id))

    async def cancel_testset(self, job_id: str) -> TestsetJob:
        """Stop a running generation; the rows it kept stay in its dataset."""
        return await self._c.send(calls.cancel_testset(job_id))

    async def wait_testset(
        self,
        job_id: str,
        *,
        poll: float = 0.5,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> TestsetJob:
        """Poll until the generation is done, failed or cancelled; a ClientError after
        ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = await self.testset(job_id)
            if job.state != "running":
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise ClientError(f"test set '{job_id}' still running after {timeout:g} s")
            await sleep(poll)


class AsyncPrompts:
    """Stored prompt templates, by code."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def add(
        self,
        code: str,
        template: str,
        *,
        kind: str = "judge",
        language: str | None = None,
        description: str = "",
        replace: bool = False,
    ) -> PromptOut:
        """Store a template: judge uses {query} {context} {answer}; answer {query} {context}."""
        body = {
            "code": code,
            "template": template,
            "kind": kind,
            "language": language,
            "description": description,
            "replace": replace,
        }
        return await self._c.send(calls.add_prompt(body))

    async def list(self, offset: int = 0, limit: int = 1000) -> builtins.list[PromptOut]:
        """At most ``limit`` (1 to 1,000) from ``offset``, by name."""
        return await self._c.send(calls.prompts(offset, limit))

    async def get(self, code: str) -> PromptOut:
        return await self._c.send(calls.prompt(code))

    async def delete(self, code: str) -> PromptOut:
        return await self._c.send(calls.prompt(code, "DELETE"))


class AsyncApps:
    """Stored apps (rag and http), by name or id."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def add(self, name: str, config: Mapping[str, Any], *, replace: bool = False) -> AppOut:
        """``{"kind": "rag", "space": ..., "model": ...}`` or ``{"kind": "http", "url": ...}``."""
        return await self._c.send(calls.add_app(name, config, replace))

    async def list(self, offset: int = 0, limit: int = 1000) -> builtins.list[AppOut]:
        """At most ``limit`` (1 to 1,000) from ``offset``, by name."""
        return await self._c.send(calls.apps(offset, limit))

    async def get(self, app: str | int) -> AppOut:
        return await self._c.send(calls.app(app))

    async def delete(self, app: str | int) -> AppOut:
        return await self._c.send(calls.app(app, "DELETE"))


class AsyncDatasets:
    """Stored datasets and their rows."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def upload(self, path: str | Path, name: str | None = None) -> DatasetOut:
        """Store a JSONL, JSON or CSV file's rows (checked) under ``name``."""
        return await self._c.send(calls.upload_dataset(path, name))

    async def upload_trec(
        self,
        qrels: str | Path,
        run: str | Path,
        name: str | None = None,
        *,
        depth: int | None = None,
        complete: bool = False,
    ) -> TrecDatasetOut:
        """Store TREC qrels and a run (plain or gzip) as rows, one per judged query of the
        run (``complete``: every judged query), each ranking cut at ``depth``."""
        return await self._c.send(calls.upload_trec(qrels, run, name, depth, complete))

    async def list(self, offset: int = 0, limit: int = 50) -> Page[DatasetOut]:
        return await self._c.send(calls.datasets(offset, limit))

    async def get(self, dataset: str | int) -> DatasetOut:
        return await self._c.send(calls.dataset(dataset))

    async def versions(self, dataset: str | int) -> builtins.list[DatasetOut]:
        """Every version of a dataset, newest first, each with its number of runs."""
        return await self._c.send(calls.dataset_versions(dataset))

    async def delete(self, dataset: str | int) -> DatasetOut:
        """Forget a dataset (every version; ``NAME@VERSION``: one)."""
        return await self._c.send(calls.delete_dataset(dataset))

    async def rows(
        self, dataset: str | int, offset: int = 0, limit: int = 100
    ) -> Page[dict[str, Any]]:
        return await self._c.send(calls.dataset_rows(dataset, offset, limit))


class AsyncUsers:
    """Users of the service and their keys (admins only); a key is answered once."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def add(self, name: str, role: str) -> UserKeyOut:
        """A new user with ``role`` (admin, member, reviewer, viewer) and its key."""
        return await self._c.send(calls.add_user(name, role))

    async def list(self) -> builtins.list[UserOut]:
        return await self._c.send(calls.users())

    async def disable(self, name: str) -> UserOut:
        """Refuse the user's key from now on."""
        return await self._c.send(calls.disable_user(name))

    async def rotate(self, name: str) -> UserKeyOut:
        """A new key for the user; the old one stops working at once."""
        return await self._c.send(calls.rotate_key(name))


class AsyncOnline:
    """Online evaluation rules: which production traces are scored, by which metrics and
    judge, at what share and daily budget."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def rules(self) -> builtins.list[OnlineRuleInfo]:
        """Every rule, with what it spent today (UTC) and the traces it scored."""
        return await self._c.send(calls.online_rules())

    async def rule(self, name: str) -> OnlineRuleInfo:
        return await self._c.send(calls.online_rule(name))

    async def create_rule(self, rule: OnlineRule | Mapping[str, Any]) -> OnlineRuleInfo:
        """Make a rule (an ``OnlineRule`` or its fields as a dict)."""
        made = rule if isinstance(rule, OnlineRule) else OnlineRule.model_validate(dict(rule))
        return await self._c.send(calls.create_online_rule(made))

    async def replace_rule(self, rule: OnlineRule) -> OnlineRuleInfo:
        """Replace the stored rule of the same name whole."""
        body = rule.model_dump(mode="json")
        return await self._c.send(calls.online_rule(rule.name, "PUT", body))

    async def update_rule(self, name: str, **changes: Any) -> OnlineRuleInfo:
        """Change the fields given (``enabled=False`` pauses the rule)."""
        return await self._c.send(calls.online_rule(name, "PATCH", changes))

    async def delete_rule(self, name: str) -> dict[str, str]:
        return await self._c.send(calls.delete_online_rule(name))


class AsyncMonitor:
    """Production metrics over time with drift verdicts, and alert rules (admins make and
    change them) with their episodes."""

    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def series(
        self,
        metrics: Sequence[str],
        *,
        bucket: Literal["hour", "day"] = "hour",
        since: str | None = None,
        until: str | None = None,
        window: str | None = None,
        baseline: str = "window",
        alpha: float = 0.05,
    ) -> MonitorOut:
        """Each metric in hour or day buckets (mean, CI, n) over ``since``..``until`` (ISO
        times), and the drift of the last ``window`` (``1h``) against ``baseline``
        (``window``, or ``run:RUN_ID``), with compare's verdicts."""
        options: dict[str, Any] = {"bucket": bucket, "since": since, "until": until}
        options.update(window=window, baseline=baseline, alpha=alpha)
        return await self._c.send(calls.monitor(metrics, options))

    async def add_alert(
        self, name: str, expression: str, *, webhook_url: str | None = None, enabled: bool = True
    ) -> AlertRuleOut:
        """A new alert rule, e.g. ``faithfulness.mean < 0.8 over 1h with n >= 50``."""
        body = AlertRuleIn(
            name=name, expression=expression, webhook_url=webhook_url, enabled=enabled
        )
        return await self._c.send(calls.add_alert(body))

    async def alerts(self) -> builtins.list[AlertRuleOut]:
        return await self._c.send(calls.alerts())

    async def alert(self, name: str) -> AlertRuleOut:
        return await self._c.send(calls.alert(name))

    async def enable_alert(self, name: str, enabled: bool = True) -> AlertRuleOut:
        return await self._c.send(calls.enable_alert(name, enabled))

    async def delete_alert(self, name: str) -> AlertRuleOut:
        return await self._c.send(calls.alert(name, "DELETE"))

    async def events(
        self, rule: str | None = None, limit: int = 100
    ) -> builtins.list[AlertEventOut]:
        """Alert episodes, newest first (of one rule if given)."""
        return await self._c.send(calls.alert_events(rule, limit))
