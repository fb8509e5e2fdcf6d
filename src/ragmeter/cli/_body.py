"""A DB-GPT request body given to ``ragmeter eval`` as its dataset (``req.json``): its scene,
metrics and context fill the options the command line did not give (those win)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ragmeter.cli._common import validation_message
from ragmeter.errors import ConfigError
from ragmeter.runs.planning.config import EvaluationConfig, SpaceTargetConfig

if TYPE_CHECKING:
    from ragmeter.cli.eval_request import EvalRequest
    from ragmeter.runs.planning.request import EvaluateServeRequest

__all__ = ["apply_request_body"]

#: keys that make a JSON object a DB-GPT request body rather than a bare ``{"datasets": ...}``
_BODY_KEYS = ("scene_key", "scene_value", "evaluate_metrics", "context")
#: ``context`` key -> the EvalRequest field it fills
_CONTEXT_FIELDS = {
    "top_k": "top_k",
    "model": "judge_model",
    "prompt": "judge_prompt",
    "retriever": "retriever",
    "score_threshold": "score_threshold",
    "embedding_model": "embedding_model",
    "language": "language",
    "plan": "plan",
    "relevance_level": "relevance_level",
    "no_relevant": "no_relevant",
}


def _read_body(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path`` if it is a DB-GPT request body, else None (the loader
    reports anything wrong with the file itself)."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not any(key in data for key in _BODY_KEYS):
        return None
    return data


def _parse(path: Path, body: dict[str, Any]) -> tuple[EvaluateServeRequest, EvaluationConfig]:
    """The body checked as the service checks it (fields, context keys and values)."""
    # the service's request schema: loaded only for a file that is a request body
    from ragmeter.runs.planning.request import SCENES, EvaluateServeRequest, config_from_request

    try:
        parsed = EvaluateServeRequest.model_validate(body)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {validation_message(exc)}") from None
    scene = (parsed.scene_key or "").strip()
    if scene and scene not in SCENES:
        raise ConfigError(f"{path}: scene_key must be one of {', '.join(SCENES)}, got {scene!r}")
    probe = parsed.model_copy(  # a recall probe: every context key is read and checked
        update={"scene_key": "recall", "scene_value": "-", "evaluate_metrics": ["-"]}
    )
    try:
        config = config_from_request(probe)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return parsed, config


def _checked(config: EvaluationConfig, key: str) -> Any:
    """The checked value of ``context.key`` in ``config``."""
    target = config.target
    assert isinstance(target, SpaceTargetConfig)  # the probe is a recall request
    values = {
        "top_k": config.top_k,
        "model": None if config.judge is None else config.judge.model,
        "prompt": config.judge_prompt,
        "retriever": target.retriever,
        "score_threshold": target.score_threshold,
        "embedding_model": config.embedder.model,
        "language": config.language,
        "plan": config.plan,
        "relevance_level": config.relevance_level,
        "no_relevant": config.no_relevant,
    }
    return values[key]


def apply_request_body(request: EvalRequest) -> EvalRequest:
    """``request`` with the options a DB-GPT body in ``request.data`` names and the command
    line left out: scene recall -> ``space``, app -> ``app``, ``evaluate_metrics`` ->
    ``metrics``, ``context.top_k/model/prompt/...`` -> top_k, judge model, judge prompt, ..."""
    body = _read_body(request.data)
    if body is None:
        return request
    parsed, config = _parse(request.data, body)
    updates: dict[str, Any] = {}
    scene, value = (parsed.scene_key or "").strip(), (parsed.scene_value or "").strip()
    if request.space is None and request.app is None and scene in ("recall", "app"):
        if not value:
            raise ConfigError(
                f"{request.data}: scene_value is required for scene '{scene}' "
                f"(or give --{'space' if scene == 'recall' else 'app'})"
            )
        updates["space" if scene == "recall" else "app"] = value
    if not request.metrics.strip() and parsed.evaluate_metrics:
        updates["metrics"] = ",".join(m.strip() for m in parsed.evaluate_metrics if m.strip())
    context = parsed.context or {}
    for key, field in _CONTEXT_FIELDS.items():
        if context.get(key) is not None and getattr(request, field) is None:
            updates[field] = _checked(config, key)
    return dataclasses.replace(request, **updates) if updates else request
