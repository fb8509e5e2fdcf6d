"""DB-GPT's 18-field ``EvaluateServeRequest`` as its clients send it, checked and read into an
``EvaluationConfig`` (``config_from_request``), naming the field at fault."""

from __future__ import annotations

import contextlib
import re
from typing import Any, Literal

from ragmeter._grades import MAX_GRADE
from ragmeter.errors import ConfigError, clip
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
from ragmeter.wire import EvaluateServeRequest

__all__ = [
    "CONTEXT_KEYS",
    "DEFAULT_PARALLEL",
    "SCENES",
    "EvaluateServeRequest",
    "config_from_request",
]

Scene = Literal["recall", "app", "dataset"]
SCENES: dict[str, str] = {
    "recall": "Retrieve top_k chunks from a knowledge space (scene_value: its id or name) "
    "for each query and score the retrieval.",
    "app": "Ask an app (scene_value: its id or name) each query and score its answer and "
    "contexts; context.model is the judge, context.prompt the judge prompt's code.",
    "dataset": "Score rows that carry their own predictions (response, retrieved_contexts).",
}
#: keys ``context`` may hold, and what each does
CONTEXT_KEYS: dict[str, str] = {
    "top_k": "retrieval depth of the recall scene (default 5); metrics without @k cut there",
    "prompt": "code of a stored judge prompt for AnswerRelevancyMetric",
    "model": "judge model: a [models.NAME] of ragmeter.toml",
    "retriever": "recall scene: vector (default), bm25 or hybrid",
    "score_threshold": "recall scene: drop chunks scoring below this",
    "embedding_model": "embedder for similarity metrics: a [models.NAME] (default: local)",
    "language": "judge prompt language: auto (default), en or zh",
    "plan": "judge plan: fused (default) or separate",
    "relevance_level": "ranking metrics: the grade from which a judged item is relevant (1)",
    "no_relevant": "ranking metrics on a row with no relevant item: null (default) or zero",
}
#: rows evaluated at once when the request gives no ``parallel_num``
DEFAULT_PARALLEL = 8
#: the most a client asks for (a server's own cap is ``[server] max_parallel``, 64 by default)
MAX_PARALLEL = 64
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _text(context: dict[str, Any], key: str) -> str | None:
    value = context.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"context.{key} must be a non-empty string, got {clip(repr(value))}")
    return value.strip()


def _number(context: dict[str, Any], key: str, *, integer: bool) -> Any:
    value = context.get(key)
    if value is None:
        return None
    if isinstance(value, str):  # DB-GPT's UI sends numbers as strings
        with contextlib.suppress(ValueError):
            value = int(value) if integer else float(value)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        what = "an integer" if integer else "a number"
        raise ConfigError(f"context.{key} must be {what}, got {clip(repr(value))}")
    if integer and value < 1:
        raise ConfigError(f"context.{key} must be at least 1, got {value}")
    return value


def _choice(context: dict[str, Any], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = context.get(key)
    if value is None:
        return default
    if value not in allowed:
        raise ConfigError(
            f"context.{key} must be one of {', '.join(allowed)}, got {clip(repr(value))}"
        )
    return str(value)


def _scene(request: EvaluateServeRequest) -> Scene:
    scene = (request.scene_key or "").strip()
    if scene not in SCENES:
        got = "nothing" if not scene else repr(scene)
        raise ConfigError(f"scene_key must be one of {', '.join(SCENES)}, got {got}")
    if scene in ("recall", "app") and not (request.scene_value or "").strip():
        what = "knowledge space" if scene == "recall" else "app"
        raise ConfigError(f"scene_value is required for scene '{scene}': the {what}'s id or name")
    return scene  # type: ignore[return-value]  # checked against SCENES above


def _target(scene: Scene, value: str | None, context: dict[str, Any]) -> TargetConfig:
    """The scene's target; every context key of the recall scene is checked in any scene."""
    top_k = _number(context, "top_k", integer=True)
    retriever = _choice(context, "retriever", ("vector", "bm25", "hybrid"), "vector")
    threshold = _number(context, "score_threshold", integer=False)
    if scene == "recall":
        assert value is not None  # _scene checked it
        return SpaceTargetConfig(
            space=value,
            retriever=retriever,
            top_k=top_k or DEFAULT_RECALL_TOP_K,
            score_threshold=threshold,
        )
    if scene == "app":
        assert value is not None
        return AppTargetConfig(app=value)
    return NoTarget()


def config_from_request(request: EvaluateServeRequest) -> EvaluationConfig:
    """Check a request's fields (naming the one at fault) and read it into the config a run
    keeps: ``scene_key``/``scene_value`` -> target, ``context`` -> judge, embedder, top_k,
    plan, language, ``parallel_num`` -> concurrency."""
    scene = _scene(request)
    metrics = [m.strip() for m in request.evaluate_metrics or [] if m and m.strip()]
    if not metrics:
        raise ConfigError("evaluate_metrics must name at least one metric (see GET /metrics)")
    context = dict(request.context or {})
    unknown = sorted(set(context) - set(CONTEXT_KEYS))
    if unknown:
        raise ConfigError(
            f"context has unknown key(s) {', '.join(unknown)}; known: {', '.join(CONTEXT_KEYS)}"
        )
    parallel = request.parallel_num
    if parallel is not None and parallel < 1:
        raise ConfigError(f"parallel_num must be at least 1, got {parallel}")
    if request.evaluate_code is not None and not _RUN_ID.match(request.evaluate_code):
        raise ConfigError(
            f"evaluate_code {request.evaluate_code!r} is not a valid run id: use 1-64 letters, "
            "digits, '_', '-' or '.'"
        )
    judge = _text(context, "model")
    return EvaluationConfig(
        metrics=tuple(metrics),
        target=_target(scene, (request.scene_value or "").strip() or None, context),
        judge=None if judge is None else JudgeConfig(model=judge),
        judge_prompt=_text(context, "prompt"),
        embedder=EmbedderConfig(model=_text(context, "embedding_model")),
        top_k=_number(context, "top_k", integer=True),
        language=_choice(context, "language", ("auto", "en", "zh"), "auto"),
        plan=_choice(context, "plan", ("fused", "separate"), "fused"),
        relevance_level=_level(context),
        no_relevant=_choice(context, "no_relevant", ("null", "zero"), "null"),
        concurrency=parallel or DEFAULT_PARALLEL,
    )


def _level(context: dict[str, Any]) -> int:
    level = _number(context, "relevance_level", integer=True)
    if level is not None and level > MAX_GRADE:
        raise ConfigError(f"context.relevance_level must be at most {MAX_GRADE}, got {level}")
    return 1 if level is None else int(level)
