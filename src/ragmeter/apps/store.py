"""Apps by name in the store, and turning a stored app into a running one. Editing an app
makes its next version and keeps every version: ``NAME`` names the newest, ``NAME@2``
version 2. A RAG app's answer prompt is pinned to the prompt's version when the app is
saved (``prompt@3``), so one app version always answers alike.

Settings are stored, never keys: a key is read at run time from the variable named by
``api_key_env``."""

from __future__ import annotations

import importlib
import os
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select

from ragmeter.apps.base import App, CallableApp
from ragmeter.apps.configs import (
    APP_CONFIG,
    AgentAppConfig,
    AnyAppConfig,
    AppConfig,
    CallableAppConfig,
    HttpAppConfig,
    RagAppConfig,
)
from ragmeter.apps.http import DEFAULT_REPLY_BYTES, HttpApp
from ragmeter.apps.policy import AppPolicy
from ragmeter.apps.rag import RagApp
from ragmeter.errors import ConfigError, NotFoundError, clip
from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.prompts.store import PromptStore
from ragmeter.store.db import Store, open_store
from ragmeter.store.lookup import add_named, by_name_or_id, next_version, split_version
from ragmeter.store.models import AppRecord, AppVersionRecord
from ragmeter.store.names import check_name

__all__ = [
    "AppConfig",
    "AppStore",
    "CallableAppConfig",
    "HttpAppConfig",
    "RagAppConfig",
    "build_app",
]


class AppStore:
    """The apps of one store."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or open_store()

    def add(
        self,
        name: str,
        config: AnyAppConfig,
        *,
        replace: bool = False,
    ) -> AppRecord:
        """Store an app; a taken name is a ConflictError unless ``replace`` (then the app
        keeps its id and gets the new settings as its next version; the same settings make
        no new version). A RAG app's prompt is pinned to its version now."""
        name = check_name(name, "app")
        settings = self._pinned(config).model_dump()
        if replace:
            with self.store.session() as session:
                found = session.scalars(select(AppRecord).where(AppRecord.name == name)).first()
                if found is not None:
                    if (found.kind, found.config) == (config.kind, settings):
                        return found
                    found.kind, found.config = config.kind, settings
                    found.version = next_version(
                        session, AppVersionRecord.version, AppVersionRecord.name, name
                    )
                    session.add(_version_of(found))
                    session.commit()
                    session.refresh(found)
                    return found
        with self.store.session() as session:
            version = next_version(session, AppVersionRecord.version, AppVersionRecord.name, name)
        record = AppRecord(name=name, kind=config.kind, config=settings, version=version)
        add_named(self.store, record, "app")
        with self.store.session() as session:
            session.add(_version_of(record))
            session.commit()
        return record

    def _pinned(self, config: AnyAppConfig) -> AnyAppConfig:
        if isinstance(config, RagAppConfig) and config.prompt is not None:
            pinned = PromptStore(self.store).pinned(config.prompt, kind="answer")
            return config.model_copy(update={"prompt": pinned})
        return config

    def get(self, app: str | int) -> AppRecord:
        """An app by name or id (its newest version) or ``NAME@V`` (version V, as a record
        not bound to the store); NotFoundError listing the known names."""
        key, version = split_version(app, "app")
        with self.store.session() as session:
            record = by_name_or_id(
                session, AppRecord, key, what="app", hint="ragmeter app add NAME ..."
            )
            if version is None or version == record.version:
                return record
            found = session.scalars(
                select(AppVersionRecord).where(
                    AppVersionRecord.name == record.name, AppVersionRecord.version == version
                )
            ).first()
        if found is None:
            raise NotFoundError(
                f"no app '{clip(str(app))}': '{record.name}' has versions 1 to {record.version}"
            )
        return AppRecord(
            id=record.id,
            name=record.name,
            kind=found.kind,
            config=found.config,
            version=version,
            created_by=record.created_by,
            created_at=found.created_at,
            updated_at=found.created_at,
        )

    def pinned(self, app: str | int) -> str:
        """``NAME@V`` of the app ``app`` names: what a run keeps."""
        record = self.get(app)
        return f"{record.name}@{record.version}"

    def config(self, app: str | int) -> AnyAppConfig:
        record = self.get(app)
        try:
            return APP_CONFIG.validate_python(record.config)
        except ValidationError as exc:
            raise ConfigError(f"app '{record.name}' has invalid settings: {exc}") from exc

    def apps(self, offset: int = 0, limit: int | None = None) -> list[AppRecord]:
        """Apps by name; ``offset`` and ``limit`` page them (the service's list)."""
        query = select(AppRecord).order_by(AppRecord.name).offset(offset).limit(limit)
        with self.store.session() as session:
            return list(session.scalars(query).all())

    def remove(self, app: str | int) -> AppRecord:
        """Remove an app; its versions stay, for the runs that used them."""
        if "@" in str(app):
            raise ConfigError(
                f"remove takes an app's name or id, not one version: {clip(str(app))!r}"
            )
        record = self.get(app)
        with self.store.session() as session:
            session.delete(session.get(AppRecord, record.id))
            session.commit()
        return record


def _version_of(record: AppRecord) -> AppVersionRecord:
    return AppVersionRecord(
        name=record.name, version=record.version, kind=record.kind, config=record.config
    )


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
    config: AnyAppConfig,
    *,
    kb: KnowledgeBase | None = None,
    cache: bool = True,
    max_concurrency: int = 16,
    policy: AppPolicy | None = None,
) -> App:
    """A running app from its settings; fails early on a missing space, model, prompt or key.
    The service gives its ``policy``: settings it does not allow are refused, and an HttpApp
    reaches only the hosts it allows and reads capped replies."""
    if policy is not None:
        policy.check(config, creating=False)
    if isinstance(config, HttpAppConfig):
        return HttpApp(
            name,
            config.url,
            query_key=config.query_key,
            answer_key=config.answer_key,
            contexts_key=config.contexts_key,
            headers=_key_header(config.api_key_env, name),
            timeout=config.timeout,
            max_reply_bytes=policy.max_reply_bytes if policy else DEFAULT_REPLY_BYTES,
            hosts=policy.hosts_for(config) if policy else None,
        )
    if isinstance(config, CallableAppConfig):
        return CallableApp(_function(config.target), name)
    from ragmeter.judge.from_config import judge_from_config

    if isinstance(config, AgentAppConfig):
        from ragmeter.apps.agent import ToolAgent

        settings = kb.settings if kb is not None else None
        engine = judge_from_config(
            config.model,
            base_url=config.base_url,
            api_key_env=config.api_key_env,
            cache=False,
            settings=settings,
        )
        tools = config.tools if "://" in config.tools else _function(config.tools)
        return ToolAgent(
            name,
            engine.settings,
            tools,
            max_steps=config.max_steps,
            system_prompt=config.system_prompt,
        )

    kb = kb or KnowledgeBase()
    searcher = SpaceSearcher(kb, config.space)
    template = None
    if config.prompt is not None:
        template = PromptStore(kb.store).get(config.prompt, kind="answer").template
    model = judge_from_config(
        config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        # the service bounds a model by its own setting, never by one run's concurrency
        max_concurrency=None if policy is not None else max_concurrency,
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
