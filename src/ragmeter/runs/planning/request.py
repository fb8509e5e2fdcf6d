"""DB-GPT's 18-field ``EvaluateServeRequest`` as its clients send it, checked and read into an
``EvaluationConfig`` (``config_from_request``), naming the field at fault."""

from __future__ import annotations

import contextlib
import re
from typing import Any, Literal

from ragmeter.errors import ConfigError, clip
from ragmeter.runs.planning.config import (
    DEFAULT_RECALL_TOP_K,
    EvaluationConfig,
    SpaceTargetConfig,
    parse_config,
    parse_part,
)
from ragmeter.wire.runs import EvaluateServeRequest

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
    return value


#: what the request calls the config's fields, in errors (``runs.planning.config.parse_config``)
_NAMES = {
    **{key: f"context.{key}" for key in ("plan", "language", "relevance_level", "no_relevant")},
    "top_k": "context.top_k",
    "target.top_k": "context.top_k",
    "target.retriever": "context.retriever",
    "target.score_threshold": "context.score_threshold",
    "concurrency": "parallel_num",
}
_TARGET_NAMES = {k.removeprefix("target."): v for k, v in _NAMES.items()}


def _scene(request: EvaluateServeRequest) -> Scene:
    scene = (request.scene_key or "").strip()
    if scene not in SCENES:
        got = "nothing" if not scene else repr(scene)
        raise ConfigError(f"scene_key must be one of {', '.join(SCENES)}, got {got}")
    if scene in ("recall", "app") and not (request.scene_value or "").strip():
        what = "knowledge space" if scene == "recall" else "app"
        raise ConfigError(f"scene_value is required for scene '{scene}': the {what}'s id or name")
    return scene  # type: ignore[return-value]  # checked against SCENES above


def _target(scene: Scene, value: str | None, context: dict[str, Any]) -> dict[str, Any]:
    """The scene's target (checked with the rest of the config); every context key of the
    recall scene is read in any scene, so a bad one is refused in any scene."""
    top_k = _number(context, "top_k", integer=True)
    recall = {
        "kind": "space",
        "space": value,
        "retriever": context.get("retriever", "vector"),
        "top_k": DEFAULT_RECALL_TOP_K if top_k is None else top_k,
        "score_threshold": _number(context, "score_threshold", integer=False),
    }
    if scene == "recall":
        return recall
    parse_part(SpaceTargetConfig, {**recall, "space": "-"}, _TARGET_NAMES)
    if scene == "app":
        return {"kind": "app", "app": value}
    return {"kind": "none"}


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
    if request.evaluate_code is not None and not _RUN_ID.match(request.evaluate_code):
        raise ConfigError(
            f"evaluate_code {request.evaluate_code!r} is not a valid run id: use 1-64 letters, "
            "digits, '_', '-' or '.'"
        )
    judge = _text(context, "model")
    level = _number(context, "relevance_level", integer=True)
    values = {
        "metrics": tuple(metrics),
        "target": _target(scene, (request.scene_value or "").strip() or None, context),
        "judge": None if judge is None else {"model": judge},
        "judge_prompt": _text(context, "prompt"),
        "embedder": {"model": _text(context, "embedding_model")},
        "top_k": _number(context, "top_k", integer=True),
        "language": context.get("language", "auto"),
        "plan": context.get("plan", "fused"),
        "relevance_level": 1 if level is None else level,
        "no_relevant": context.get("no_relevant", "null"),
        "concurrency": DEFAULT_PARALLEL if parallel is None else parallel,
    }
    return parse_config(values, _NAMES)
