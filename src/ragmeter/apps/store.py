"""Apps by name in the store, and turning a stored app into a running one.

Settings are stored, never keys: a key is read at run time from the variable named by
``api_key_env``."""

from __future__ import annotations

import importlib
import os
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from sqlalchemy import select

from ragmeter.apps.base import App, CallableApp
from ragmeter.apps.http import HttpApp
from ragmeter.apps.rag import RagApp
from ragmeter.errors import ConfigError
from ragmeter.knowledge import KnowledgeBase, RetrieverName, SpaceSearcher
from ragmeter.prompts import PromptStore
from ragmeter.store import AppRecord, Store, open_store
from ragmeter.store.lookup import add_named, by_name_or_id, check_name

__all__ = [
    "AppConfig",
    "AppStore",
    "CallableAppConfig",
    "HttpAppConfig",
    "RagAppConfig",
    "build_app",
]


class RagAppConfig(BaseModel):
    """Retrieve from ``space``, answer with ``model`` (a [models.NAME], or an id at
    ``base_url``) using the answer prompt ``prompt`` (a code; the default if None)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["rag"] = "rag"
    space: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    prompt: str | None = None
    top_k: int = Field(default=5, ge=1)
    retriever: RetrieverName = "vector"
    score_threshold: float | None = None


class HttpAppConfig(BaseModel):
    """POST ``{query_key: query}`` to ``url``; read ``answer_key`` and ``contexts_key``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["http"] = "http"
    url: str = Field(pattern=r"^https?://")
    query_key: str = "query"
    answer_key: str = "answer"
    contexts_key: str = "contexts"
    api_key_env: str | None = None
    timeout: float = Field(default=60.0, gt=0)


class CallableAppConfig(BaseModel):
    """A Python function ``module:function`` taking the query."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["callable"] = "callable"
    target: str = Field(pattern=r"^[\w.]+:[\w.]+$")


AppConfig = Annotated[RagAppConfig | HttpAppConfig | CallableAppConfig, Field(discriminator="kind")]
_CONFIG: TypeAdapter[RagAppConfig | HttpAppConfig | CallableAppConfig] = TypeAdapter(AppConfig)


class AppStore:
    """The apps of one store."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or open_store()

    def add(
        self,
        name: str,
        config: RagAppConfig | HttpAppConfig | CallableAppConfig,
        *,
        replace: bool = False,
    ) -> AppRecord:
        """Store an app; a taken name is a ConflictError unless ``replace`` (then the app
        keeps its id and gets the new settings)."""
        check_name(name, "app")
        if replace:
            with self.store.session() as session:
                found = session.scalars(select(AppRecord).where(AppRecord.name == name)).first()
                if found is not None:
                    found.kind = config.kind
                    found.config = config.model_dump()
                    session.commit()
                    session.refresh(found)
                    return found
        record = AppRecord(name=name, kind=config.kind, config=config.model_dump())
        add_named(self.store, record, "app")
        return record

    def get(self, app: str | int) -> AppRecord:
        """An app by name or id; NotFoundError listing the known names."""
        with self.store.session() as session:
            return by_name_or_id(
                session, AppRecord, app, what="app", hint="ragmeter app add NAME ..."
            )

    def config(self, app: str | int) -> RagAppConfig | HttpAppConfig | CallableAppConfig:
        record = self.get(app)
        try:
            return _CONFIG.validate_python(record.config)
        except ValidationError as exc:
            raise ConfigError(f"app '{record.name}' has invalid settings: {exc}") from exc

    def apps(self) -> list[AppRecord]:
        with self.store.session() as session:
            return list(session.scalars(select(AppRecord).order_by(AppRecord.name)).all())

    def remove(self, app: str | int) -> AppRecord:
        record = self.get(app)
        with self.store.session() as session:
            session.delete(session.get(AppRecord, record.id))
            session.commit()
        return record


def _key_header(api_key_env: str | None, app: str) -> dict[str, str]:
    if api_key_env is None:
        return {}
    key = os.environ.get(api_key_env)
    if not key:
        raise ConfigError(f"app '{app}' reads its API key from ${api_key_env}, which is not set")
    return {"Authorization": f"Bearer {key}"}


def _function(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import '{module_name}' for app '{target}': {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ConfigError(f"'{module_name}' has no '{attribute}'")
        value = getattr(value, part)
    if not callable(value):
        raise ConfigError(f"'{target}' is not callable")
    return value


def build_app(
    name: str,
    config: RagAppConfig | HttpAppConfig | CallableAppConfig,
    *,
    kb: KnowledgeBase | None = None,
    cache: bool = True,
    max_concurrency: int = 16,
) -> App:
    """A running app from its settings; fails early on a missing space, model, prompt or key."""
    if isinstance(config, HttpAppConfig):
        return HttpApp(
            name,
            config.url,
            query_key=config.query_key,
            answer_key=config.answer_key,
            contexts_key=config.contexts_key,
            headers=_key_header(config.api_key_env, name),
            timeout=config.timeout,
        )
    if isinstance(config, CallableAppConfig):
        return CallableApp(_function(config.target), name)
    from ragmeter.runs.judges import judge_from_config

    kb = kb or KnowledgeBase()
    searcher = SpaceSearcher(kb, config.space)
    template = None
    if config.prompt is not None:
        template = PromptStore(kb.store).get(config.prompt, kind="answer").template
    model = judge_from_config(
        config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        max_concurrency=max_concurrency,
        cache=cache,
        settings=kb.settings,
    )
    return RagApp(
        name,
        searcher,
        model,
        prompt_template=template,
        top_k=config.top_k,
        retriever=config.retriever,
        score_threshold=config.score_threshold,
        max_concurrency=max_concurrency,
    )
