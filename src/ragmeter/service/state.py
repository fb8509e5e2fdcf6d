"""What the routes share: settings, the store and its stores of things, the run workers."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from fastapi import Request

from ragmeter.apps import AppStore
from ragmeter.config import Settings
from ragmeter.knowledge import KnowledgeBase
from ragmeter.prompts import PromptStore
from ragmeter.runs.manager import RunManager
from ragmeter.runs.store import RunStore

__all__ = ["Services", "services"]


@dataclass
class Services:
    settings: Settings
    kb: KnowledgeBase
    runs: RunStore
    manager: RunManager
    prompts: PromptStore
    apps: AppStore
    #: set when the server starts stopping; long requests (uploads) stop at their next step
    stopping: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def open(cls, settings: Settings) -> Services:
        kb = KnowledgeBase(settings=settings)
        runs = RunStore(kb.store)
        return cls(
            settings=settings,
            kb=kb,
            runs=runs,
            manager=RunManager(runs, kb, workers=settings.server.workers),
            prompts=PromptStore(kb.store),
            apps=AppStore(kb.store),
        )

    @property
    def max_upload_bytes(self) -> int:
        return int(self.settings.server.max_upload_mb * 1_000_000)


def services(request: Request) -> Services:
    """FastAPI dependency: the services of the app serving ``request``."""
    found: Services = request.app.state.services
    return found
