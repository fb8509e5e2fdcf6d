"""What the routes share: settings, the store and its stores of things, the run workers."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import Request

from ragmeter.apps import AppPolicy, AppStore
from ragmeter.config import Settings, config_path, load_settings
from ragmeter.errors import ConfigError
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.prompts.store import PromptStore
from ragmeter.runs.execution.executor import RunLimits
from ragmeter.runs.execution.manager import RunManager
from ragmeter.runs.monitor.alerts import ScoreReader
from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.storage.testset_jobs import TestsetJobStore
from ragmeter.runs.storage.traces import TraceStore
from ragmeter.service._online import OnlineRules
from ragmeter.service._testsets import TestsetJobs
from ragmeter.service.ingest import SpanQueue
from ragmeter.store.users import AuditLog, UserStore

__all__ = ["Services", "services"]

log = logging.getLogger(__name__)

Stamp = tuple[int, int] | None


def _stamp(path: Path) -> Stamp:
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_mtime_ns, found.st_size)


@dataclass
class Services:
    settings: Settings
    kb: KnowledgeBase
    runs: RunStore
    manager: RunManager
    prompts: PromptStore
    apps: AppStore
    users: UserStore
    audit: AuditLog
    #: test set generations (``POST /knowledge/spaces/{space}/testsets``)
    testsets: TestsetJobs
    #: production traces, and the spans received and not yet stored (``service.ingest``)
    traces: TraceStore
    span_queue: SpanQueue
    #: online evaluation rules and their background scorer's trace source
    online: OnlineRules
    config_file: Path = field(default_factory=config_path)
    _stamp: Stamp = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: set when the server starts stopping; long requests (uploads) stop at their next step
    stopping: threading.Event = field(default_factory=threading.Event)
    #: the production scores monitors and alert rules read (the trace store's; None: none)
    score_reader: ScoreReader | None = None

    @classmethod
    def open(cls, settings: Settings) -> Services:
        kb = KnowledgeBase(settings=settings)
        runs = RunStore(kb.store, lease_seconds=settings.server.run_lease_seconds)
        config_file = Path(settings.source) if settings.source else config_path()
        return cls(
            settings=settings,
            kb=kb,
            runs=runs,
            manager=RunManager(
                runs,
                kb,
                workers=settings.server.workers,
                policy=lambda: AppPolicy.from_settings(kb.settings),
                limits=RunLimits(
                    max_seconds=settings.server.max_run_hours * 3600,
                    max_bytes=int(settings.server.max_run_mb * 1_000_000),
                ),
            ),
            prompts=PromptStore(kb.store),
            apps=AppStore(kb.store),
            users=UserStore(kb.store),
            audit=AuditLog(kb.store),
            testsets=TestsetJobs(
                TestsetJobStore(kb.store, lease_seconds=settings.server.run_lease_seconds)
            ),
            traces=(
                traces := TraceStore(
                    kb.store,
                    settings.online.max_spans_per_trace,
                    settings.online.max_monitor_scores,
                )
            ),
            span_queue=SpanQueue(
                traces,
                settings.online.max_queued_spans,
                int(settings.online.max_queued_mb * 1_000_000),
            ),
            online=OnlineRules.open(kb.store, traces),
            score_reader=traces.read_scores,
            config_file=config_file,
            _stamp=_stamp(config_file),
        )

    @property
    def max_upload_bytes(self) -> int:
        return int(self.settings.server.max_upload_mb * 1_000_000)

    @property
    def app_policy(self) -> AppPolicy:
        """The rules for apps made or run here, from the current settings."""
        return AppPolicy.from_settings(self.settings)

    def refresh(self) -> None:
        """Re-read ragmeter.toml when it changed: ``[models]`` and ``[knowledge]`` apply at
        once; ``[server]`` and ``[store]`` when the server starts again (it says so in its
        log). A file that no longer parses is logged and the settings in force are kept."""
        stamp = _stamp(self.config_file)
        if stamp == self._stamp:
            return
        with self._lock:
            if stamp == self._stamp:
                return
            self._stamp = stamp
            try:
                fresh = load_settings(self.config_file)
            except ConfigError as exc:
                log.error("ragmeter.toml changed but cannot be read; settings kept: %s", exc)
                return
            if fresh.server != self.settings.server or fresh.store != self.settings.store:
                log.warning("[server] and [store] changes apply when the server restarts")
            bound = {"server": self.settings.server, "store": self.settings.store}
            kept = fresh.model_copy(update=bound)
            self.settings = kept
            self.kb.settings = kept
            log.info("ragmeter.toml re-read: models %s", ", ".join(sorted(kept.models)) or "none")


def services(request: Request) -> Services:
    """FastAPI dependency: the services of the app serving ``request``, with settings current."""
    found: Services = request.app.state.services
    found.refresh()
    return found
