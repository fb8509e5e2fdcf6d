"""``evaluate`` / ``aevaluate``: the Python API. Its options become an ``EvaluationConfig``
(objects given instead of names are carried beside it), and the rows go through the same
executor as the command line and the service: kept in memory by default, or stored as a run
with ``store=True`` or ``store="name"`` (calling again with the name of a stopped run resumes
it, doing only the rows it lacks)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from ragmeter._specs import split_specs
from ragmeter._sync import run_sync
from ragmeter.datasets import Dataset, load_dataset
from ragmeter.embeddings import Embedder
from ragmeter.errors import ConfigError, ConflictError, MetricError, NotFoundError, RagmeterError
from ragmeter.judge.plan import PlanKind
from ragmeter.reports import EvaluationReport
from ragmeter.reports.html import shared_name
from ragmeter.runs.execution.choice import executor_for
from ragmeter.runs.execution.executor import (
    Executor,
    MakingStop,
    Progress,
    execute_plan,
    execute_run,
    leave_cancelled,
)
from ragmeter.runs.execution.sinks import MemorySink
from ragmeter.runs.planning.config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RECALL_TOP_K,
    ROWS_PER_REQUEST,
    EvaluationConfig,
    ObjectPart,
    parse_config,
)
from ragmeter.runs.planning.lineage import RunLabels, dataset_name_of, make_lineage
from ragmeter.runs.planning.plan import Given, RunPlan, build_plan
from ragmeter.runs.planning.scoring import MetricLike, resolve_metrics
from ragmeter.runs.planning.targets import Target
from ragmeter.store.bulk import collector_paused

if TYPE_CHECKING:
    from ragmeter.knowledge.spaces import KnowledgeBase

__all__ = [
    "EvaluateOptions",
    "RunStopped",
    "aevaluate",
    "config_from_options",
    "evaluate",
    "run_plan",
]


class EvaluateOptions(TypedDict, total=False):
    """Keyword options of ``evaluate`` and ``aevaluate``."""

    embedder: Embedder | str | None
    judge: Any
    top_k: int | None
    max_concurrency: int
    on_progress: Callable[[int], None] | None
    plan: PlanKind
    language: Literal["auto", "en", "zh"]
    target: Target | None
    on_target_progress: Callable[[int], None] | None
    space: str | int | None
    retriever: str
    score_threshold: float | None
    app: Any
    judge_prompt: str | None
    store: bool | str
    tags: Iterable[str]
    note: str
    dataset_name: str | None
    relevance_level: int
    no_relevant: Literal["null", "zero"]
    executor: Literal["local", "ray"]
    ray_address: str | None


def _label(obj: Any) -> str:
    return str(getattr(obj, "name", None) or type(obj).__name__)


def _target(options: EvaluateOptions, objects: set[ObjectPart]) -> dict[str, Any]:
    from ragmeter.knowledge.search import parse_retrievers

    given = [k for k in ("target", "space", "app") if options.get(k) is not None]
    if len(given) > 1 and given != ["space", "app"]:
        raise ConfigError(f"give one of target, space or app, not {' and '.join(given)}")
    space, app = options.get("space"), options.get("app")
    if options.get("target") is not None:
        objects.add("target")
        return {"kind": "none"}
    if app is not None:
        if not isinstance(app, str):
            objects.add("app")
        name = app if isinstance(app, str) else _label(app)
        return {"kind": "app", "app": name, "space": None if space is None else str(space)}
    if space is None:
        return {"kind": "none"}
    retrievers = parse_retrievers(options.get("retriever", "vector"))
    if len(retrievers) != 1:
        raise ConfigError("evaluate takes one retriever; call it once per retriever")
    top_k = options.get("top_k")
    return {
        "kind": "space",
        "space": str(space),
        "retriever": retrievers[0],
        "top_k": DEFAULT_RECALL_TOP_K if top_k is None else top_k,
        "score_threshold": options.get("score_threshold"),
    }


def _concurrency(options: EvaluateOptions) -> int:
    """``max_concurrency``: the Python API's own option, read into the config's judge and
    concurrency (which check the rest)."""
    limit = options.get("max_concurrency", DEFAULT_CONCURRENCY)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"max_concurrency must be a whole number >= 1, got {limit!r}")
    return limit


def config_from_options(
    metrics: str | Iterable[MetricLike], options: EvaluateOptions
) -> tuple[EvaluationConfig, Given]:
    """The config ``evaluate``'s arguments describe, and the objects given instead of names."""
    limit = _concurrency(options)
    objects: set[ObjectPart] = set()
    given = Given(target=options.get("target"))
    items = split_specs(metrics) if isinstance(metrics, str) else list(metrics)
    if any(not isinstance(m, str) for m in items):
        given.metrics = resolve_metrics(items, top_k=options.get("top_k"))
        specs = tuple(m.metric_name for m in given.metrics)
        objects.add("metrics")
    else:
        specs = tuple(str(m).strip() for m in items if str(m).strip())
        if not specs:
            raise MetricError("no metrics given")
    judge, embedder = options.get("judge"), options.get("embedder")
    judge_config: dict[str, Any] | None = None
    if isinstance(judge, str):
        judge_config = {"model": judge, "max_concurrency": limit}
    elif judge is not None:
        given.judge = judge
        objects.add("judge")
        judge_config = {"model": _label(judge)}
    embedder_config: dict[str, Any] = {}
    if isinstance(embedder, str):
        embedder_config = {"model": embedder}
    elif embedder is not None:
        given.embedder = embedder
        objects.add("embedder")
        embedder_config = {"model": _label(embedder)}
    if not isinstance(options.get("app"), str | None):
        given.app = options["app"]
    target = _target(options, objects)
    config = parse_config(
        {
            "metrics": specs,
            "target": target,
            "judge": judge_config,
            "judge_prompt": options.get("judge_prompt"),
            "embedder": embedder_config,
            "top_k": options.get("top_k"),
            "plan": options.get("plan", "fused"),
            "language": options.get("language", "auto"),
            "relevance_level": options.get("relevance_level", 1),
            "no_relevant": options.get("no_relevant", "null"),
            "concurrency": ROWS_PER_REQUEST * limit if judge is not None else limit,
            "objects": frozenset(objects),
        }
    )
    return config, given


async def aevaluate(
    rows: Any, metrics: str | Iterable[MetricLike], **options: Unpack[EvaluateOptions]
) -> EvaluationReport:
    """Evaluate ``rows`` (path, DataFrame, list of dicts or Dataset) with ``metrics``.

    ``judge`` is a ``JudgeEngine``, any object with ``complete(prompt)``, or a model name
    from ``ragmeter.toml``. ``top_k`` cuts retrieved lists for metrics without their own
    ``@k`` (names stay as written: ``"mrr"`` is reported as ``mrr``); ``on_progress`` is
    called with the number of row x metric results finished since its last call; ``plan``
    and ``language`` steer the judge prompts. ``relevance_level`` is the grade from which a
    judged item counts as relevant for ranking metrics without their own ``rel`` (trec_eval's
    -l, default 1); ``no_relevant="zero"`` scores a row without a relevant item 0, as
    trec_eval does, instead of null with the reason. A ``target`` (a space's retriever, an app)
    fills each row first; ``on_target_progress`` counts its rows. An empty dataset is a
    ``DatasetError`` naming it. ``store=True`` keeps the evaluation as a run in the store
    (``store="name"`` names it; calling again with that name resumes it if it stopped),
    with ``tags`` and a ``note``, its rows kept as the version of dataset ``dataset_name``
    (default: the file's name; unnamed for rows given in Python) holding exactly them.
    """
    config, given = config_from_options(metrics, options)
    store = options.get("store") or False
    dataset = load_dataset(rows, key_ahead=bool(store))
    progress = Progress(options.get("on_target_progress"), options.get("on_progress"))
    kb = None
    if store:
        from ragmeter.knowledge.spaces import KnowledgeBase

        kb = KnowledgeBase()
    plan = build_plan(config, dataset, kb, given=given, judge_hint="")
    executor = _executor(options, kb)
    name = store if isinstance(store, str) else None
    labels = None
    if store:
        labels = RunLabels(
            name=name, tags=tuple(options.get("tags", ())), note=options.get("note", "")
        )
    elif options.get("tags") or options.get("note") or options.get("dataset_name"):
        raise ConfigError("tags, note and dataset_name are kept with a stored run: add store=True")
    return await run_plan(
        plan,
        progress,
        kb=kb if store else None,
        name=name,
        labels=labels,
        dataset_name=options.get("dataset_name"),
        executor=executor,
    )


def _executor(options: EvaluateOptions, kb: KnowledgeBase | None) -> Executor | None:
    """``executor`` and ``ray_address``: None for the local one (the default, or
    ``[executor] kind``); a Ray cluster is joined at once, so one out of reach is a
    ConfigError before a run is made."""
    from ragmeter.config import load_settings

    settings = kb.settings if kb is not None else load_settings()
    store_url = kb.store.url if kb is not None else None
    kind, address = options.get("executor"), options.get("ray_address")
    return executor_for(settings, store_url, kind, address, join=True)


async def run_plan(
    plan: RunPlan,
    progress: Progress | None = None,
    *,
    kb: KnowledgeBase | None = None,
    name: str | None = None,
    labels: RunLabels | None = None,
    dataset_name: str | None = None,
    executor: Executor | None = None,
) -> EvaluationReport:
    """Execute ``plan`` (here, or on ``executor``): in memory, or with ``kb`` as a run of its
    store (new, or the stopped run ``name`` resumed), raising what stopped it after keeping
    every finished row. The plan's clients are closed after. A stored run keeps ``labels``
    (its name, tags and note) and what made it, over the version of dataset
    ``dataset_name`` (default: the rows' file name without its extension; unnamed for rows
    not read from a file) holding exactly its rows."""
    started = time.perf_counter()
    try:
        if kb is None:
            sink = MemorySink()
            await execute_plan(plan, sink, progress=progress, executor=executor)
            seconds = time.perf_counter() - started
            label = getattr(plan.target, "label", None)
            return sink.report(plan.rows, plan.metrics, seconds, label)
        opening = _Opening(name, labels or RunLabels(name=name), dataset_name)
        return await _stored(plan, kb, opening, progress, started, executor)
    finally:  # connections belong to this event loop; clients reopen on their next use
        await plan.aclose()


@dataclass(frozen=True)
class _Opening:
    """How a stored run is opened: the id to resume or take, what to call it, its dataset;
    ``new``: the run must not exist (its rows are scored already as a new run's);
    ``stop``: how a stop while the run is made is told (the thread making it then leaves it
    cancelled and resumable); ``began``: when the rows of a run made while they are scored
    began to be (its start)."""

    run_id: str | None
    labels: RunLabels
    dataset_name: str | None
    new: bool = False
    stop: MakingStop | None = None
    began: datetime | None = None


async def _stored(
    plan: RunPlan,
    kb: KnowledgeBase,
    opening: _Opening,
    progress: Progress | None,
    started: float,
    executor: Executor | None = None,
) -> EvaluationReport:
    from ragmeter.runs.storage.store import RunStore
    from ragmeter.store.models import utc_now

    runs = RunStore(kb.store)
    kept = MemorySink()  # what this execution stores, for the report
    make = None
    if _overlaps(plan) and not await asyncio.to_thread(_run_exists, runs, opening.run_id):
        run_id = opening.run_id or uuid.uuid4().hex  # new: scored while its dataset is stored
        opened = replace(opening, run_id=run_id, new=True, stop=MakingStop(), began=utc_now())
        make = asyncio.to_thread(_opened_run, runs, plan, opened)
    else:
        opened = opening
        run_id = await asyncio.to_thread(_opened_run, runs, plan, opening)
    await execute_run(
        runs,
        kb,
        run_id,
        plan=plan,
        progress=progress,
        also=kept,
        executor=executor,
        make=make,
        stop=opened.stop,
    )
    record = await asyncio.to_thread(runs.get, run_id)
    if record.state != "done":
        raise RunStopped(run_id, record.state, record.error, record.error_kind, record.resumable)
    label = getattr(plan.target, "label", None)
    if kept.held() == len(plan.rows):  # every row done now: no need to read them back
        report = kept.report(plan.rows, plan.metrics, 0.0, label)
    else:
        report = await asyncio.to_thread(runs.report, run_id)
    report.seconds = time.perf_counter() - started
    report.target = label
    report.run_id = run_id
    return report


class RunStopped(RagmeterError):
    """A stored run that did not finish: its finished rows are kept; ``resumable`` says
    whether a resume can go on."""

    def __init__(
        self, run_id: str, state: str, error: str | None, kind: str | None, resumable: bool
    ) -> None:
        hint = f"; its finished rows are kept: resume it with 'ragmeter runs resume {run_id}'"
        super().__init__(
            f"run {run_id} {state}: {error or 'no reason'}" + (hint if resumable else "")
        )
        self.run_id = run_id
        self.state = state
        self.kind = kind
        self.resumable = resumable


def _overlaps(plan: RunPlan) -> bool:
    """Whether a new run of ``plan`` is scored while its dataset is stored: only when its
    scoring writes nothing to the store (no judge, no target, no embedding), which on SQLite
    would wait for the dataset's transaction, and a row at a time gains nothing from it."""
    embeds = any(getattr(metric, "embeds", ()) for metric in plan.metrics)
    return plan.judge is None and plan.target is None and not embeds


def _run_exists(runs: Any, run_id: str | None) -> bool:
    """Whether ``run_id`` names a stored run (to resume, or to refuse)."""
    if run_id is None:
        return False
    try:
        runs.get(run_id)
    except NotFoundError:
        return False
    return True


def _opened_run(runs: Any, plan: RunPlan, opening: _Opening) -> str:
    """``_open_run``, its dataset's rows (a dict each, by the hundred thousand) made and
    stored with the cycle collector paused. A run made after its evaluation was stopped
    (``opening.stop``) is left cancelled and resumable here: whoever stopped it may not be
    waiting any more."""
    with collector_paused():
        run_id = _open_run(runs, plan, opening)
    if opening.stop is not None and opening.stop.made():
        leave_cancelled(runs, run_id)
    return run_id


@dataclass(frozen=True)
class _RawRows:
    """A dataset's rows as dicts, made afresh on each pass (hashing them, then storing
    them): a million rows held as dicts at once took about a gigabyte."""

    dataset: Dataset

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.dataset.each_raw()

    def __len__(self) -> int:
        return len(self.dataset)


def _open_run(runs: Any, plan: RunPlan, opening: _Opening) -> str:
    """A new pending run for ``plan``, or the stopped run ``opening.run_id`` reopened (same
    config and rows), so that only its missing rows are evaluated."""
    names = [m.metric_name for m in plan.metrics]
    rows = _RawRows(plan.dataset)  # read column by column, once per pass: never all at once
    name = opening.run_id
    if name is not None:
        try:
            record = runs.get(name)
        except NotFoundError:
            record = None
        if record is not None and opening.new:
            raise ConflictError(
                f"run '{name}' was made meanwhile by another evaluation; evaluate again to "
                "resume it, or choose another name"
            )
        if record is not None:
            stored = list(runs.iter_dataset_rows(record.dataset_id))
            if record.spec != {**plan.config.stored(), "metric_names": names} or stored != list(
                rows
            ):
                raise ConflictError(
                    f"run '{name}' exists with other rows or settings; choose another name"
                )
            if record.state == "done":
                raise ConflictError(f"run '{name}' is done; choose another name to run again")
            return str(runs.reopen(name).id)
    source = plan.dataset.source or ""
    origin = plan.dataset.origin
    dataset, _new = runs.keep_dataset(
        rows,
        name=opening.dataset_name or dataset_name_of(source),
        source=shared_name(source),
        file_key=None if origin is None else origin.key(),
    )
    lineage = make_lineage(plan, dataset)
    record = runs.create(
        plan.config, names, dataset.id, len(plan.rows), {}, name,
        labels=opening.labels, lineage=lineage, began=opening.began,
    )  # fmt: skip
    return str(record.id)


def evaluate(
    rows: Any, metrics: str | Iterable[MetricLike], **options: Unpack[EvaluateOptions]
) -> EvaluationReport:
    """Blocking form of ``aevaluate``."""
    return run_sync(aevaluate(rows, metrics, **options))
