"""``ragmeter eval``: rows that carry their predictions, the ``recall`` scene (``--space``,
one or several retrievers side by side) or the ``app`` scene (``--app``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from ragmeter._specs import split_specs
from ragmeter.cli._body import apply_request_body
from ragmeter.cli._common import console, err_console
from ragmeter.cli._render import (
    progress_bars,
)
from ragmeter.cli.eval_output import Reports, check_scored, print_disagreements, print_reports
from ragmeter.cli.eval_request import JUDGE_HINT, EvalRequest, load_rows
from ragmeter.errors import ConfigError
from ragmeter.reports import EvaluationReport
from ragmeter.runs.planning.config import (
    DEFAULT_RECALL_TOP_K,
    ROWS_PER_REQUEST,
    AppTargetConfig,
    EvaluationConfig,
    SpaceTargetConfig,
    parse_config,
)
from ragmeter.runs.planning.lineage import RunLabels
from ragmeter.runs.planning.lineage import label as target_label
from ragmeter.store.bulk import held_until_exit

if TYPE_CHECKING:
    from ragmeter.embeddings.process import ProcessEmbedder
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.runs.execution.executor import Executor
    from ragmeter.runs.execution.repeats import Disagreement
    from ragmeter.runs.planning.plan import RunPlan

__all__ = [
    "JUDGE_HINT",
    "EvalRequest",
    "evaluate_request",
    "load_rows",
    "print_reports",
    "run_eval",
]


#: what the command line calls the config's fields in errors (``parse_config``)
OPTION_NAMES = {
    "plan": "--plan",
    "language": "--language",
    "top_k": "--top-k",
    "target.top_k": "--top-k",
    "target.retriever": "--retriever",
    "target.score_threshold": "--score-threshold",
    "relevance_level": "--relevance-level",
    "no_relevant": "--no-relevant",
    "judge.max_concurrency": "--max-concurrency",
    "judge.timeout": "--judge-timeout",
    "concurrency": "--max-concurrency",
}


def _check(request: EvalRequest) -> None:
    """What only the command line's options can get wrong together (the config checks each
    value: ``eval_config``)."""
    if request.judge_base_url is not None and request.judge_model is None:
        raise ConfigError("--judge-base-url needs --judge-model, the model id to ask")
    if request.space is None and request.app is None:
        for option, value in (
            ("--retriever", request.retriever),
            ("--score-threshold", request.score_threshold),
        ):
            if value is not None:
                raise ConfigError(f"{option} needs --space (the knowledge space to search)")
    if request.app is not None and (request.retriever or request.score_threshold is not None):
        raise ConfigError(
            "--retriever and --score-threshold are for the recall scene (--space without "
            "--app); an app retrieves with its own settings"
        )


def run_eval(request: EvalRequest) -> Reports:
    """Load, check and evaluate; print the summary; write the results. Returns the reports
    with their labels (retriever or app name; empty without a target). Raises when a metric
    has no score in any row, after printing and writing the results."""
    return evaluate_request(request)[0]


def evaluate_request(request: EvalRequest) -> tuple[Reports, list[Disagreement]]:
    """``run_eval``, and with ``--repeats`` the rows whose repeats disagree (the reports
    then hold the mean over the repeats)."""
    request = apply_request_body(request)
    if not request.metrics.strip():
        raise ConfigError(
            "no metrics: give --metrics (e.g. -m mrr,ndcg@10), or evaluate_metrics in a "
            "DB-GPT request body"
        )
    flaky: list[Disagreement] = []
    if request.server is not None:
        from ragmeter.cli.remote import run_remote

        if request.repeats > 1:
            raise ConfigError("--repeats runs the evaluation here: leave out --server")
        if request.executor is not None or request.ray_address is not None:
            raise ConfigError(
                "--executor chooses where this machine's runs go; a server's runs use its "
                "own [executor]: leave out --server or --executor"
            )
        reports = run_remote(request, request.server)
    else:
        reports, flaky = _run_local(request)
    check_scored(reports)
    return reports, flaky


def _target(request: EvalRequest, retriever: str | None) -> dict[str, Any]:
    if request.app is not None:
        return {"kind": "app", "app": request.app, "space": request.space}
    if request.space is not None:
        return {
            "kind": "space",
            "space": request.space,
            "retriever": retriever or "vector",
            "top_k": request.top_k or DEFAULT_RECALL_TOP_K,
            "score_threshold": request.score_threshold,
        }
    return {"kind": "none"}


def eval_config(request: EvalRequest, retriever: str | None = None) -> EvaluationConfig:
    """What ``ragmeter eval`` was asked to do, as the config its run keeps; a bad value is
    exit 2 naming its option."""
    judge = None
    if request.judge_model is not None:
        judge = {
            "model": request.judge_model,
            "base_url": request.judge_base_url,
            "api_key_env": request.judge_api_key_env,
            "timeout": request.judge_timeout,
            "cache": not request.no_cache,
            "max_concurrency": request.max_concurrency,
        }
    values = {
        "metrics": tuple(split_specs(request.metrics)),
        "target": _target(request, retriever),
        "judge": judge,
        "judge_prompt": request.judge_prompt,
        "embedder": {
            "model": request.embedding_model,
            "base_url": request.embedding_base_url,
            "api_key_env": request.embedding_api_key_env,
        },
        "top_k": request.top_k,
        "plan": request.plan or "fused",
        "language": request.language or "auto",
        "relevance_level": request.relevance_level or 1,
        "no_relevant": request.no_relevant or "null",
        "concurrency": request.max_concurrency * (ROWS_PER_REQUEST if judge is not None else 1),
    }
    return parse_config(values, OPTION_NAMES)


def _stages(plan: RunPlan, label: str) -> list[tuple[str, int]]:
    rows = len(plan.rows)
    stages = [(label, rows)] if plan.target is not None else []
    return [*stages, ("evaluating", rows * len(plan.metrics))]


def _interrupted(run_id: str | None) -> NoReturn:
    if run_id is not None:
        err_console.print(
            f"interrupted: run {run_id} keeps the rows finished so far; finish it with "
            f"'ragmeter runs resume {run_id}'",
            highlight=False,
        )
    raise typer.Exit(130)


def _execute(
    plan: RunPlan,
    label: str,
    kb: KnowledgeBase | None,
    stored: _Stored | None = None,
    executor: Executor | None = None,
) -> EvaluationReport:
    """One evaluation through the executor (here, or ``executor``'s cluster), with progress
    bars; stored unless ``kb`` is None (as ``stored`` says). Ctrl-C stops a stored run
    keeping its finished rows, and says how to resume it."""
    import uuid

    from ragmeter._sync import run_sync
    from ragmeter.runs.api import RunStopped, run_plan
    from ragmeter.runs.execution.executor import Progress

    run_id = None if kb is None else uuid.uuid4().hex
    try:
        with progress_bars(console, _stages(plan, label)) as advances:
            progress = Progress(advances[0] if plan.target is not None else None, advances[-1])
            labels, dataset = (None, None) if stored is None else (stored.labels, stored.dataset)
            report = run_sync(
                run_plan(
                    plan,
                    progress,
                    kb=kb,
                    name=run_id,
                    labels=labels,
                    dataset_name=dataset,
                    executor=executor,
                )
            )
    except RunStopped as exc:
        if exc.state != "cancelled":  # a judge or app that failed: exit 1, naming it
            raise
        _interrupted(run_id)
    except KeyboardInterrupt:
        _interrupted(run_id)
    if report.run_id is not None:
        called = (
            "" if stored is None or stored.labels.name is None else f" as '{stored.labels.name}'"
        )
        console.print(
            f"run {report.run_id} stored{called}: {target_label(plan.config)} "
            f"(ragmeter runs show {report.run_id})",
            highlight=False,
        )
    return report


@dataclass(frozen=True)
class _Stored:
    """What a stored run of ``ragmeter eval`` is called, and its dataset's name."""

    labels: RunLabels
    dataset: str | None


def _stored_as(request: EvalRequest, retriever: str | None, several: bool) -> _Stored:
    from ragmeter.runs.planning.lineage import dataset_name_of

    dataset = request.dataset_name or dataset_name_of(str(request.data))
    base = request.name or dataset
    name = f"{base}-{retriever}" if several and base else base
    return _Stored(RunLabels(name=name, tags=request.tags, note=request.note), dataset)


def _label(plan: RunPlan) -> str:
    target = plan.config.target
    if isinstance(target, SpaceTargetConfig):
        return f"{target.retriever} search"
    return f"app {getattr(plan.target, 'label', '')}" if isinstance(target, AppTargetConfig) else ""


def _target_name(plan: RunPlan) -> str | None:
    """How the tables name the target: the space's stored name, or the app's."""
    from ragmeter.runs.planning.targets import AppTarget, RecallTarget

    if isinstance(plan.target, RecallTarget):
        return plan.target.searcher.info.name
    return plan.target.label if isinstance(plan.target, AppTarget) else None


def _app_usage(plan: RunPlan) -> None:
    from ragmeter.apps import RagApp

    app = getattr(plan.target, "app", None)
    if isinstance(app, RagApp) and app.usage.requests:
        console.print(
            f"app model: {app.usage.requests:g} requests, {app.usage.cached:g} from cache, "
            f"{app.usage.prompt_tokens:g} prompt tokens",
            highlight=False,
        )


def _embed_in_helper(plans: list[RunPlan]) -> ProcessEmbedder | None:
    """The local model in a helper process for plans whose judge is asked and whose metrics
    embed row texts: the helper encodes on another core while this process serves the judge's
    requests (in a thread, encoding holds the GIL and slows them). None when no plan needs it."""
    wanted = [
        plan
        for plan in plans
        if plan.embedder is None
        and plan.judge is not None
        and any(getattr(m, "embeds", ()) for m in plan.metrics)
    ]
    if not wanted:
        return None
    from ragmeter.embeddings.process import ProcessEmbedder

    try:
        helper = ProcessEmbedder()
    except OSError:  # no process to start here: the model runs in this process, as before
        return None
    for plan in wanted:
        plan.embedder = helper
    return helper


def _repeat(
    request: EvalRequest, plans: list[RunPlan], first: EvaluationReport, kb: KnowledgeBase | None
) -> tuple[EvaluationReport, list[Disagreement]]:
    """Repeats 2..N of the one plan, in memory, each judge request with the repeat's seed;
    the mean report and the rows whose repeats disagree."""
    from ragmeter.runs.execution.repeats import combine_repeats, disagreements, seeded
    from ragmeter.runs.planning.plan import build_plan

    reports = [first]
    for repeat in range(1, request.repeats):
        plan = build_plan(plans[0].config, plans[0].dataset, kb, judge_hint=JUDGE_HINT)
        plan.judge = seeded(plan.judge, repeat)
        plan.embedder = plans[0].embedder
        reports.append(_execute(plan, f"repeat {repeat + 1} of {request.repeats}", None))
    return combine_repeats(reports), disagreements(reports)


def _check_repeats(request: EvalRequest, plans: list[RunPlan]) -> None:
    from ragmeter.runs.execution.repeats import MAX_REPEATS

    if not 1 <= request.repeats <= MAX_REPEATS:
        raise ConfigError(f"--repeats must be between 1 and {MAX_REPEATS}, not {request.repeats}")
    if request.repeats > 1 and len(plans) > 1:
        raise ConfigError("--repeats repeats one evaluation: give one --retriever")
    if request.repeats > 1 and request.app is not None:
        raise ConfigError(
            "--repeats judges the same answers again, and an app would answer anew: give "
            "rows that carry the app's answers (response) instead of --app"
        )
    if request.repeats > 1 and plans[0].judge is None:
        raise ConfigError(
            "--repeats repeats the judge's verdicts: give a judged metric and --judge-model"
        )


def _executor(request: EvalRequest, kb: KnowledgeBase | None) -> Executor | None:
    """``--executor`` and ``--ray-address`` (default: ``[executor]``); None: this process."""
    from ragmeter.config import load_settings
    from ragmeter.runs.execution.choice import executor_for

    settings = kb.settings if kb is not None else load_settings()
    store_url = kb.store.url if kb is not None else None
    # a cluster out of reach is bad input, told before a run is made
    return executor_for(settings, store_url, request.executor, request.ray_address, join=True)


def _run_local(request: EvalRequest) -> tuple[Reports, list[Disagreement]]:
    from ragmeter.knowledge.search import parse_retrievers
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.runs.planning.plan import build_plan

    _check(request)
    dataset = load_rows(request, key_ahead=not request.no_store)
    held_until_exit()  # the rows live as long as the command
    retrievers: list[str | None] = [None]
    if request.space is not None and request.app is None:
        retrievers = list(parse_retrievers(request.retriever or "vector"))
    configs = [eval_config(request, r) for r in retrievers]
    needs_kb = not request.no_store or configs[0].target.kind != "none"
    kb = KnowledgeBase() if needs_kb or request.judge_prompt is not None else None
    plans = [build_plan(c, dataset, kb, judge_hint=JUDGE_HINT) for c in configs]
    _check_repeats(request, plans)
    executor = _executor(request, kb)
    helper = _embed_in_helper(plans)
    reports: Reports = []
    flaky: list[Disagreement] = []
    several = len(plans) > 1
    try:
        for plan, retriever in zip(plans, retrievers, strict=True):
            stored = _stored_as(request, retriever, several)
            kept_in = None if request.no_store else kb
            report = _execute(plan, _label(plan), kept_in, stored, executor)
            if request.repeats > 1:
                stored_id = report.run_id
                report, flaky = _repeat(request, plans, report, kb)
                report.run_id = stored_id
                if kb is not None and stored_id is not None:
                    from ragmeter.runs.storage.store import RunStore

                    RunStore(kb.store).keep_repeats(stored_id, report)
            reports.append((report.target or "", report))
    finally:
        if helper is not None:
            helper.close()
    print_reports(request, reports, len(dataset), _target_name(plans[0]))
    for plan in plans:
        _app_usage(plan)
    if request.repeats > 1:
        print_disagreements(flaky, request.repeats)
    return reports, flaky
