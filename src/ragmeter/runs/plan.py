"""From a ``RunSpec`` and rows to everything a run needs: metrics, target, judge, embedder and
the checked rows. Built once when a run is asked for (so a bad request fails at once, naming
the field) and again by the worker that executes it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.apps import AppPolicy, AppStore, RagApp, build_app
from ragmeter.datasets import Dataset, Row, load_dataset
from ragmeter.embeddings import embedder_from_config
from ragmeter.errors import ConfigError
from ragmeter.judge.from_config import judge_from_config
from ragmeter.knowledge import KnowledgeBase, SpaceSearcher, parse_retrievers
from ragmeter.metrics import AnswerRelevancyMetric, EvaluationMetric
from ragmeter.prompts import PromptStore
from ragmeter.runs.evaluate import check_judge, prepare_rows, resolve_metrics
from ragmeter.runs.request import RunSpec
from ragmeter.runs.targets import AppTarget, RecallTarget, Target
from ragmeter.store import Store

__all__ = ["DEFAULT_RECALL_TOP_K", "RunPlan", "apply_judge_prompt", "build_plan"]

#: retrieval depth of the recall scene when no top_k is given (DB-GPT's context.top_k)
DEFAULT_RECALL_TOP_K = 5


@dataclass
class RunPlan:
    """A run ready to execute. ``rows`` are checked and have their doc names resolved."""

    spec: RunSpec
    rows: Sequence[Row]
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
) -> None:
    """Give every AnswerRelevancyMetric the stored judge template ``code``."""
    targets = [m for m in metrics if isinstance(m, AnswerRelevancyMetric)]
    if not targets:
        raise ConfigError(f"{option} sets AnswerRelevancyMetric's template; add that metric")
    template = PromptStore(store).get(code, kind="judge").template
    for metric in targets:
        metric.prompt_template = template


def _target(spec: RunSpec, kb: KnowledgeBase, policy: AppPolicy | None) -> Target | None:
    if spec.scene == "recall":
        assert spec.scene_value is not None  # RunSpec from spec_from_request has it
        retrievers = parse_retrievers(spec.retriever)
        return RecallTarget(
            SpaceSearcher(kb, spec.scene_value),
            retriever=retrievers[0],
            top_k=spec.top_k or DEFAULT_RECALL_TOP_K,
            score_threshold=spec.score_threshold,
        )
    if spec.scene == "app":
        assert spec.scene_value is not None
        store = AppStore(kb.store)
        record = store.get(spec.scene_value)
        app = build_app(
            record.name,
            store.config(record.id),
            kb=kb,
            max_concurrency=spec.parallel_num,
            policy=policy,
        )
        searcher = app.searcher if isinstance(app, RagApp) else None
        return AppTarget(app, searcher=searcher, max_concurrency=spec.parallel_num)
    return None


def build_plan(
    spec: RunSpec,
    rows: Sequence[dict[str, Any]] | Dataset,
    kb: KnowledgeBase,
    *,
    source: str = "datasets",
    policy: AppPolicy | None = None,
) -> RunPlan:
    """Resolve and check everything ``spec`` names against the store; the first problem is
    raised (a RagmeterError naming the field, row or thing not found). The service gives its
    app ``policy``: the run's app may only use what it allows."""
    dataset = rows if isinstance(rows, Dataset) else load_dataset(list(rows), name=source)
    if len(dataset) == 0:
        raise ConfigError(f"{source} holds no rows")
    metrics = resolve_metrics(spec.metrics, top_k=spec.top_k)
    if spec.judge_prompt is not None:
        apply_judge_prompt(metrics, spec.judge_prompt, kb.store, option="context.prompt")
    target = _target(spec, kb, policy)
    prepared = prepare_rows(dataset, metrics, target)
    judge = None
    if spec.judge_model is not None:
        # the model's own limit, shared by every run: never this run's parallel_num
        judge = judge_from_config(spec.judge_model, settings=kb.settings)
    check_judge(judge, metrics, hint=" (context.model names it)")
    embedder = embedder_from_config(spec.embedding_model, settings=kb.settings)
    return RunPlan(spec, prepared, metrics, target, judge, embedder)
