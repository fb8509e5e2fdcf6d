"""A judge card as the API answers it (``GET /api/v2/serve/judge/cards``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

__all__ = ["JudgeCardOut"]


class JudgeCardOut(BaseModel):
    """A judge model's agreement with people on a human-labelled suite (``ragmeter judge
    card``): which judge, metric, prompt and suite, when and by whom, its ``headline``
    (``judge card: κ 0.41 [0.33, 0.49], n 817, ragtruth``) and the whole card (agreement per
    language, task and model, cost, latency)."""

    id: int
    judge_model: str
    metric: str
    prompt_code: str | None = None
    prompt_hash: str | None = None
    suite: str
    suite_hash: str | None = None
    created_at: datetime | None = None
    created_by: str | None = None
    headline: str
    card: dict[str, Any]
