"""The settings of an app, as stored (never a key: ``api_key_env`` names the variable read at
run time)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ragmeter.knowledge.models import RetrieverName

__all__ = [
    "APP_CONFIG",
    "AgentAppConfig",
    "AnyAppConfig",
    "AppConfig",
    "CallableAppConfig",
    "HttpAppConfig",
    "RagAppConfig",
]


class RagAppConfig(BaseModel):
    """Retrieve from ``space``, answer with ``model`` (a [models.NAME], or an id at
    ``base_url``) using the answer prompt ``prompt`` (a code; the default if None)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["rag"] = "rag"
    space: str = Field(max_length=200)
    model: str = Field(max_length=200)
    base_url: str | None = Field(default=None, max_length=2000)
    api_key_env: str | None = Field(default=None, max_length=200)
    prompt: str | None = Field(default=None, max_length=200)
    top_k: int = Field(default=5, ge=1)
    retriever: RetrieverName = "vector"
    score_threshold: float | None = None


class HttpAppConfig(BaseModel):
    """POST ``{query_key: query}`` to ``url``; read ``answer_key`` and ``contexts_key``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["http"] = "http"
    url: str = Field(pattern=r"^https?://", max_length=2000)
    query_key: str = Field(default="query", min_length=1, max_length=200)
    answer_key: str = Field(default="answer", min_length=1, max_length=200)
    contexts_key: str = Field(default="contexts", min_length=1, max_length=200)
    api_key_env: str | None = Field(default=None, max_length=200)
    timeout: float = Field(default=60.0, gt=0)


class CallableAppConfig(BaseModel):
    """A Python function ``module:function`` taking the query."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["callable"] = "callable"
    target: str = Field(pattern=r"^[\w.]+:[\w.]+$")


class AgentAppConfig(BaseModel):
    """``ToolAgent``: ``model`` (a [models.NAME], or an id at ``base_url``) acting with the
    row's tools, run by ``tools``: an http(s) URL taking ``{"name", "arguments"}``, or a Python
    function ``module:function`` of (name, arguments); at most ``max_steps`` model turns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["agent"] = "agent"
    model: str = Field(max_length=200)
    base_url: str | None = Field(default=None, max_length=2000)
    api_key_env: str | None = Field(default=None, max_length=200)
    tools: str = Field(pattern=r"^(https?://.+|[\w.]+:[\w.]+)$", max_length=2000)
    max_steps: int = Field(default=8, ge=1, le=100)
    system_prompt: str | None = Field(default=None, max_length=20_000)


AnyAppConfig = RagAppConfig | HttpAppConfig | CallableAppConfig | AgentAppConfig
AppConfig = Annotated[AnyAppConfig, Field(discriminator="kind")]
APP_CONFIG: TypeAdapter[AnyAppConfig] = TypeAdapter(AppConfig)
