"""Online evaluation rules as the API takes and answers them (``/api/v2/serve/online/rules``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.config import OnlineRule, TraceFilter

__all__ = ["OnlineRuleInfo", "OnlineRulePatch"]


class OnlineRulePatch(BaseModel):
    """Fields of a rule to change (PATCH); those left out stay as they are. The same ranges
    as ``OnlineRule``'s."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    service: str | None = Field(default=None, max_length=200)
    root_name: str | None = Field(default=None, max_length=200)
    span_kind: str | None = Field(default=None, max_length=64)
    filters: list[TraceFilter] | None = None
    metrics: list[str] | None = Field(default=None, min_length=1)
    judge: str | None = Field(default=None, max_length=200)
    sample_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    max_requests_per_day: int | None = Field(default=None, ge=0, le=10_000_000)
    max_tokens_per_day: int | None = Field(default=None, ge=0, le=10_000_000_000)
    delay_seconds: float | None = Field(default=None, ge=0.0, le=86_400.0)


class OnlineRuleInfo(BaseModel):
    """A rule with where it comes from (``ragmeter.toml``, read-only here, or the API), who
    made it, what it spent today (UTC) and the traces it scored."""

    rule: OnlineRule
    source: Literal["ragmeter.toml", "api"]
    created_by: str | None = None
    day: str
    requests_today: int = 0
    tokens_today: int = 0
    traces_today: int = 0
    traces_scored: int = 0
