"""From an ``EvaluationConfig`` and rows to everything an evaluation needs: metrics, target,
judge, embedder and the checked rows. Built once when an evaluation is asked for (so a bad
request fails at once, naming the field) and again by the executor that runs it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.apps import AppPolicy
from ragmeter.config import Settings
from ragmeter.datasets import Dataset, DatasetLimits, load_dataset
from ragmeter.embeddings import Embedder, embedder_from_config
from ragmeter.errors import ConfigError, DatasetError
from ragmeter.judge.from_config import judge_from_config
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.metrics import AnswerRelevancyMetric, EvaluationMetric
from ragmeter.prompts.store import PromptStore
from ragmeter.runs.planning.config import AppTargetConfig, EvaluationConfig
from ragmeter.runs.planning.scoring import check_judge, prepare_rows, resolve_metrics
from ragmeter.runs.planning.targets import Target, build_target
from ragmeter.store.db import Store

__all__ = ["Given", "RunPlan", "apply_judge_prompt", "build_plan"]


@dataclass
class Given:
    """Parts of an evaluation given as Python objects instead of names (``evaluate`` only)."""

    metrics: list[EvaluationMetric[Any, Any]] | None = None
    judge: Any = None
    embedder: Embedder | None = None
    app: Any = None
    target: Target | None = None


@dataclass
class RunPlan:
    """An evaluation ready to execute. ``rows`` are checked and have their doc names resolved."""

    config: EvaluationConfig
    dataset: Dataset
    rows: Dataset
    metrics: list[EvaluationMetric[Any, Any]]
    target: Target | None
    judge: Any
    embedder: Any

    async def aclose(self) -> None:
        """Close the clients this plan opened (they belong to the loop that used them)."""
        for client in (self.judge, self.embedder, self.target):
            aclose = getattr(client, "aclose", None)
            if aclose is not None:
                await aclose()


def apply_judge_prompt(
    metrics: Sequence[EvaluationMetric[Any, Any]],
    code: str,
    store: Store | None = None,
    option: str = "--judge-prompt",
) -> str:
    """Give every AnswerRelevancyMetric the stored judge template ``code`` (its newest
    version, or the one ``CODE@V`` names); the ``CODE@V`` it was."""
    targets = [m for m in metrics if isinstance(m, AnswerRelevancyMetric)]
    if not targets:
        raise ConfigError(f"{option} sets AnswerRelevancyMetric's template; add that metric")
    record = PromptStore(store).get(code, kind="judge")
    for metric in targets:
        metric.prompt_template = record.template
    return f"{record.code}@{record.version}"


def _pin_app(config: EvaluationConfig, kb: KnowledgeBase) -> EvaluationConfig:
    """``config`` with its stored app named by version (``NAME@V``), so a run keeps the
    settings it was made with, whatever later edits do."""
    from ragmeter.apps.store import AppStore

    target = config.target
    assert isinstance(target, AppTargetConfig)
    pinned = target.model_copy(update={"app": AppStore(kb.store).pinned(target.app)})
    return config.model_copy(update={"target": pinned})


def _judge(config: EvaluationConfig, settings: Settings | None) -> Any:
    spec = config.judge
    if spec is None:
        return None
    return judge_from_config(
        spec.model,
        base_url=spec.base_url,
        api_key_env=spec.api_key_env,
        max_concurrency=spec.max_concurrency,
        timeout=spec.timeout,
        cache=spec.cache,
        settings=settings,
    )


def build_plan(
    config: EvaluationConfig,
    rows: Sequence[dict[str, Any]] | Dataset,
    kb: KnowledgeBase | None = None,
    *,
    source: str = "datasets",
    policy: AppPolicy | None = None,
    given: Given | None = None,
    judge_hint: str = " (context.model names it)",
    limits: DatasetLimits | None = None,
    settings: Settings | None = None,
) -> RunPlan:
    """Resolve and check everything ``config`` names; the first problem is raised (a
    RagmeterError naming the field, row or thing not found). The service gives its app
    ``policy`` (the run's app may only use what it allows); its judge has no
    ``max_concurrency``: a model's own limit, shared by every run, never one run's, and
    reads rows within its ``limits`` (``[server]``). ``settings`` name the models when there
    is no ``kb`` (a Ray worker's plan; default: ``ragmeter.toml``'s)."""
    given = given or Given()
    if not isinstance(rows, Dataset):
        rows = load_dataset(list(rows), name=source, limits=limits or DatasetLimits())
    dataset = rows
    if len(dataset) == 0:  # a report of 0 rows would look like a success
        raise DatasetError("holds no rows; nothing to evaluate", source=dataset.source or source)
    metrics = given.metrics or resolve_metrics(config.metrics, top_k=config.top_k)
    store = kb.store if kb is not None else None
    if config.judge_prompt is not None:
        option = "context.prompt" if policy is not None else "--judge-prompt"
        pinned = apply_judge_prompt(metrics, config.judge_prompt, store, option=option)
        config = config.model_copy(update={"judge_prompt": pinned})
    needs_kb = config.target.kind != "none" and given.target is None
    if needs_kb and kb is None:
        kb = KnowledgeBase()
    if isinstance(config.target, AppTargetConfig) and given.app is None and given.target is None:
        assert kb is not None  # needs_kb
        config = _pin_app(config, kb)
    target = given.target or build_target(config, kb, app=given.app, policy=policy)
    settings = kb.settings if kb is not None else settings
    judge = given.judge
    if judge is None:
        judge = _judge(config, settings)
    check_judge(judge, metrics, hint=judge_hint)
    prepared = prepare_rows(dataset, metrics, target)
    embedder = given.embedder
    if embedder is None:
        spec = config.embedder
        embedder = embedder_from_config(
            spec.model, base_url=spec.base_url, api_key_env=spec.api_key_env, settings=settings
        )
    return RunPlan(config, dataset, prepared, metrics, target, judge, embedder)
