"""``ragmeter eval``: rows that carry their predictions, the ``recall`` scene (``--space``,
one or several retrievers side by side) or the ``app`` scene (``--app``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.markup import escape

from ragmeter.cli._body import apply_request_body
from ragmeter.cli._common import console
from ragmeter.cli._render import (
    null_reasons,
    progress_bars,
    side_by_side_table,
    summary_table,
    usage_line,
)
from ragmeter.datasets import Dataset, load_dataset
from ragmeter.errors import ConfigError, DatasetError, RagmeterError
from ragmeter.reports import EvaluationReport
from ragmeter.runs.config import (
    DEFAULT_RECALL_TOP_K,
    AppTargetConfig,
    EmbedderConfig,
    EvaluationConfig,
    JudgeConfig,
    NoTarget,
    SpaceTargetConfig,
    TargetConfig,
)

if TYPE_CHECKING:
    from ragmeter.knowledge import KnowledgeBase
    from ragmeter.runs.plan import RunPlan

__all__ = ["JUDGE_HINT", "EvalRequest", "load_rows", "print_reports", "run_eval"]


@dataclass(frozen=True)
class EvalRequest:
    """Everything ``ragmeter eval`` was asked to do."""

    data: Path
    #: comma-separated metric specs ("" when a DB-GPT request body names them)
    metrics: str = ""
    top_k: int | None = None
    out: Path | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_api_key_env: str | None = None
    judge_timeout: float | None = None
    judge_prompt: str | None = None
    #: fused or separate (None: fused, or the request body's context.plan)
    plan: str | None = None
    #: auto, en or zh (None: auto, or the request body's context.language)
    language: str | None = None
    no_cache: bool = False
    embedding_model: str | None = None
    embedding_base_url: str | None = None
    embedding_api_key_env: str | None = None
    max_concurrency: int = 16
    space: str | None = None
    retriever: str | None = None
    score_threshold: float | None = None
    app: str | None = None
    #: how the dataset is named in tables (default: its path)
    title: str | None = None
    #: run on this ragmeter server instead of here
    server: str | None = None
    #: keep nothing in the store (a throwaway run, not resumable)
    no_store: bool = False


def _check(request: EvalRequest) -> None:
    if request.plan not in (None, "fused", "separate"):
        raise ConfigError(f"--plan must be fused or separate, got {request.plan!r}")
    if request.language not in (None, "auto", "en", "zh"):
        raise ConfigError(f"--language must be auto, en or zh, got {request.language!r}")
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


def _print_report(report: EvaluationReport, title: str, judged: bool) -> None:
    console.print(summary_table(report, title=title))
    if judged and report.usage is not None:
        console.print(usage_line(report.usage, report.rows, report.seconds), highlight=False)
    _print_nulls(report)


def _print_nulls(report: EvaluationReport, label: str = "") -> None:
    reasons = null_reasons(report)
    if reasons:
        nulls = len(report.errors())
        where = f" ({label})" if label else ""
        console.print(f"[yellow]{nulls} result(s){where} have no score; reasons:[/]")
        for line in reasons:
            console.print(f"  [yellow]-[/] {escape(line)}", highlight=False)


def _write(out: Path, reports: Sequence[tuple[str, EvaluationReport]], key: str | None) -> None:
    out.unlink(missing_ok=True)
    lines = 0
    for label, report in reports:
        extra = {key: label} if key is not None else None
        report.to_jsonl(out, extra=extra, append=True)
        lines += len(report)
    console.print(f"results: {out} ({lines} lines)")


Reports = list[tuple[str, EvaluationReport]]


def _title(request: EvalRequest, rows: int, target: str | None) -> tuple[str, str | None]:
    """The table title (dataset, rows, target, cut-off) and the --out key of the labels."""
    name = request.title or str(request.data)
    if request.space is not None and request.app is None:
        k = request.top_k or DEFAULT_RECALL_TOP_K
        where = target or request.space
        return f"{name} · {rows} rows · space '{where}' · top {k}", "retriever"
    cut = f" · top {request.top_k}" if request.top_k is not None else ""
    if request.app is not None:
        return f"{name} · {rows} rows · app '{target or request.app}'{cut}", "app"
    return f"{name} · {rows} rows{cut}", None


def print_reports(
    request: EvalRequest, reports: Reports, rows: int, target: str | None = None
) -> None:
    """Tables (side by side for several retrievers) and the --out file of finished reports;
    ``target`` is the space's or app's name (default: as the request gave it). The cut-off
    (``--top-k``) is in the title: metric names carry ``@k`` only when the user wrote it."""
    title, key = _title(request, rows, target)
    judged = request.judge_model is not None
    if len(reports) == 1:
        label = reports[0][0]
        full = f"{title} · {label}" if key == "retriever" else title
        _print_report(reports[0][1], full, judged)
    else:
        console.print(side_by_side_table(reports, title))
        for label, report in reports:
            _print_nulls(report, label)
    if request.out is not None:
        _write(request.out, reports, key)


#: how the command line names a judge, added to "metrics X need a judge model"
JUDGE_HINT = (
    " (give --judge-model NAME: a [models.NAME] of ragmeter.toml, or a model id with "
    "--judge-base-url)"
)


def load_rows(request: EvalRequest) -> Dataset:
    """The dataset, which must hold rows: an empty file is an error, not a table of 0 rows."""
    dataset = load_dataset(request.data)
    if len(dataset) == 0:
        raise DatasetError("holds no rows; nothing to evaluate", source=str(request.data))
    return dataset


def _check_scored(reports: Reports) -> None:
    """A metric with no score in any row measured nothing (the app, judge or embedder was
    down, or no row could be scored): an error naming it, so scripts and CI notice."""
    empty: list[str] = []
    for label, report in reports:
        for name in report.metric_names:
            records = report.results(name)
            if not records or any(record.score is not None for record in records):
                continue
            reason, count = Counter(r.error or "no reason" for r in records).most_common(1)[0]
            where = f"{name} ({label})" if label else name
            empty.append(
                f"{where}: every one of its {len(records)} results is null (most common "
                f"reason, {count} of {len(records)}: {reason})"
            )
    if empty:
        raise RagmeterError("no score at all for " + "; ".join(empty))


def run_eval(request: EvalRequest) -> Reports:
    """Load, check and evaluate; print the summary; write the results. Returns the reports
    with their labels (retriever or app name; empty without a target). Raises when a metric
    has no score in any row, after printing and writing the results."""
    request = apply_request_body(request)
    if not request.metrics.strip():
        raise ConfigError(
            "no metrics: give --metrics (e.g. -m mrr,ndcg@10), or evaluate_metrics in a "
            "DB-GPT request body"
        )
    if request.server is not None:
        from ragmeter.cli.remote import run_remote

        reports = run_remote(request, request.server)
    else:
        reports = _run_local(request)
    _check_scored(reports)
    return reports


def _target(request: EvalRequest, retriever: str | None) -> TargetConfig:
    if request.app is not None:
        return AppTargetConfig(app=request.app, space=request.space)
    if request.space is not None:
        return SpaceTargetConfig(
            space=request.space,
            retriever=cast(Any, retriever or "vector"),
            top_k=request.top_k or DEFAULT_RECALL_TOP_K,
            score_threshold=request.score_threshold,
        )
    return NoTarget()


def eval_config(request: EvalRequest, retriever: str | None = None) -> EvaluationConfig:
    """What ``ragmeter eval`` was asked to do, as the config its run keeps."""
    judge = None
    if request.judge_model is not None:
        judge = JudgeConfig(
            model=request.judge_model,
            base_url=request.judge_base_url,
            api_key_env=request.judge_api_key_env,
            timeout=request.judge_timeout,
            cache=not request.no_cache,
        )
    return EvaluationConfig(
        metrics=tuple(m.strip() for m in request.metrics.split(",") if m.strip()),
        target=_target(request, retriever),
        judge=judge,
        judge_prompt=request.judge_prompt,
        embedder=EmbedderConfig(
            model=request.embedding_model,
            base_url=request.embedding_base_url,
            api_key_env=request.embedding_api_key_env,
        ),
        top_k=request.top_k,
        plan=cast(Any, request.plan or "fused"),
        language=cast(Any, request.language or "auto"),
        concurrency=request.max_concurrency,
    )


def _stages(plan: RunPlan, label: str) -> list[tuple[str, int]]:
    rows = len(plan.rows)
    stages = [(label, rows)] if plan.target is not None else []
    return [*stages, ("evaluating", rows * len(plan.metrics))]


def _execute(plan: RunPlan, label: str, kb: KnowledgeBase | None) -> EvaluationReport:
    """One evaluation through the executor, with progress bars; stored unless ``kb`` is None."""
    from ragmeter._sync import run_sync
    from ragmeter.runs.api import run_plan
    from ragmeter.runs.executor import Progress

    with progress_bars(console, _stages(plan, label)) as advances:
        progress = Progress(advances[0] if plan.target is not None else None, advances[-1])
        report = run_sync(run_plan(plan, progress, kb=kb))
    if report.run_id is not None:
        console.print(
            f"run {report.run_id} stored (ragmeter runs show {report.run_id})", highlight=False
        )
    return report


def _label(plan: RunPlan) -> str:
    target = plan.config.target
    if isinstance(target, SpaceTargetConfig):
        return f"{target.retriever} search"
    return f"app {getattr(plan.target, 'label', '')}" if isinstance(target, AppTargetConfig) else ""


def _app_usage(plan: RunPlan) -> None:
    from ragmeter.apps import RagApp

    app = getattr(plan.target, "app", None)
    if isinstance(app, RagApp) and app.usage.requests:
        console.print(
            f"app model: {app.usage.requests:g} requests, {app.usage.cached:g} from cache, "
            f"{app.usage.prompt_tokens:g} prompt tokens",
            highlight=False,
        )


def _run_local(request: EvalRequest) -> Reports:
    from ragmeter.knowledge import KnowledgeBase, parse_retrievers
    from ragmeter.runs.plan import build_plan

    _check(request)
    dataset = load_rows(request)
    retrievers: list[str | None] = [None]
    if request.space is not None and request.app is None:
        retrievers = list(parse_retrievers(request.retriever or "vector"))
    configs = [eval_config(request, r) for r in retrievers]
    needs_kb = not request.no_store or configs[0].target.kind != "none"
    kb = KnowledgeBase() if needs_kb or request.judge_prompt is not None else None
    plans = [build_plan(c, dataset, kb, judge_hint=JUDGE_HINT) for c in configs]
    reports: Reports = []
    for plan in plans:
        report = _execute(plan, _label(plan), None if request.no_store else kb)
        reports.append((report.target or "", report))
    target = None
    if plans[0].target is not None:
        searcher = getattr(plans[0].target, "searcher", None)
        target = getattr(plans[0].target, "label", None) if request.app else None
        if request.app is None and searcher is not None:
            target = searcher.info.name
    print_reports(request, reports, len(dataset), target)
    for plan in plans:
        _app_usage(plan)
    return reports
