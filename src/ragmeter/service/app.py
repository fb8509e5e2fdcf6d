"""The FastAPI application: DB-GPT-compatible evaluation routes, runs, resources, auth."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI

from ragmeter import __version__
from ragmeter.config import Settings, load_settings
from ragmeter.errors import ConfigError, RagmeterError
from ragmeter.service.audit import AuditTrail
from ragmeter.service.dashboard.routes import mount_dashboard
from ragmeter.service.dashboard.sessions import GuessLimit, SessionStore
from ragmeter.service.docs import mount_docs
from ragmeter.service.envelope import Result, install_error_handlers, ok
from ragmeter.service.identity import Keyring
from ragmeter.service.ingest import TraceWork
from ragmeter.service.middleware import BearerAuth, BodyLimit, JsonDepthLimit, LoopbackHosts
from ragmeter.service.permissions import authorize, endpoint_rules
from ragmeter.service.routes import (
    dbgpt_page,
    evaluate,
    knowledge,
    labels,
    monitor,
    online,
    resources,
    review,
    runs,
    testsets,
    traces,
    users,
)
from ragmeter.service.state import Services
from ragmeter.service.xlsx import EXPORTS

__all__ = ["API_PREFIX", "create_app"]

log = logging.getLogger(__name__)

#: DB-GPT's prefix for its serve modules; the v1 evaluate path is kept for old clients
API_PREFIX = "/api/v2/serve"


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    found: Services = app.state.services
    interrupted = found.runs.mark_interrupted()
    if interrupted:
        log.warning("runs left running by a stopped server, now resumable: %s", interrupted)
    for run_id in found.runs.pending():
        found.manager.submit(run_id)
    watch = asyncio.get_running_loop().create_task(_take_over(found))
    trace_work = TraceWork(found.span_queue, found.settings.online.keep_days)
    trace_work.start()  # spans received are stored in batches; old traces are deleted
    scoring = _online_scoring(found)
    alerts = asyncio.get_running_loop().create_task(monitor.watch_alerts(found))
    try:
        yield
    finally:
        watch.cancel()
        if scoring is not None:
            scoring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scoring  # its judges' connections closed
        alerts.cancel()
        found.stopping.set()  # uploads under way stop at their next file or batch
        await trace_work.stop()  # every span accepted is stored before the server exits
        await asyncio.to_thread(found.manager.shutdown)  # waits for the workers to stop
        EXPORTS.close()


async def _take_over(found: Services) -> None:
    """Every third of a lease: runs of another server sharing the store whose lease passed
    (it died, or hangs) are taken over and executed here, from their missing rows."""
    period = (found.runs.lease_seconds or 30.0) / 3
    while True:
        await asyncio.sleep(period)
        try:
            taken = await asyncio.to_thread(found.runs.take_over)
        except RagmeterError as exc:  # the store is away for a moment: look again later
            log.warning("cannot look for runs to take over: %s", exc)
            continue
        for run_id in taken:
            log.warning("run %s: its server's lease passed; taken over here", run_id)
            found.manager.submit(run_id)


def _online_scoring(found: Services) -> asyncio.Task[None] | None:
    """The background scorer of online rules over the server's trace source (none: no
    traces to score), after checking ragmeter.toml's rules (a bad one stops the start)."""
    for rule in found.settings.online.rules:
        try:
            found.online.check(found.settings, rule)
        except RagmeterError as exc:
            raise ConfigError(f"[[online.rules]] '{rule.name}' of ragmeter.toml: {exc}") from None
    source = found.online.source
    if source is None:
        return None
    from ragmeter.runs.online import OnlineScoring

    scoring = OnlineScoring(
        source,
        lambda: found.online.rules(found.settings),
        found.online.store,
        found.online.ledger,
        lambda: found.settings,
    )
    return asyncio.get_running_loop().create_task(scoring.run())


def _openapi_with_bearer(app: FastAPI) -> Any:
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original()
            components = schema.setdefault("components", {})
            components.setdefault("securitySchemes", {})["bearer"] = {
                "type": "http",
                "scheme": "bearer",
            }
            schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    return openapi


def create_app(settings: Settings | None = None, *, any_host: bool = False) -> FastAPI:
    """The service over the store of ``settings`` (default: ``$RAGMETER_HOME``'s). Without API
    keys it answers loopback Host names only, unless ``any_host`` (``--insecure-no-auth`` on a
    network address, where anyone may call it anyway)."""
    settings = settings or load_settings()
    app = FastAPI(
        title="ragmeter",
        version=__version__,
        description="Evaluate RAG pipelines and LLM apps. DB-GPT-compatible evaluation API.",
        lifespan=_lifespan,
        docs_url=None,  # served by mount_docs from this server's own files
        openapi_url=None,  # served by mount_docs as a route with the role check
        redoc_url=None,
        dependencies=[Depends(authorize)],  # every route: the user's role against its rule
    )
    found = app.state.services = Services.open(settings)
    install_error_handlers(app)
    # the last added runs first: keys, then the body's size, then its JSON depth, then the
    # audit log's entry of a change
    app.add_middleware(AuditTrail, audit=found.audit)
    # OTLP bodies (protobuf, or JSON perhaps gzip) are read by their route, capped by [online]
    receiver = {traces.RECEIVER_PATH: (traces.request_cap(found), "[online] max_request_mb")}
    app.add_middleware(
        JsonDepthLimit, limit=settings.server.max_json_depth, exempt=frozenset(receiver)
    )
    app.add_middleware(
        BodyLimit, limit=int(settings.server.max_request_mb * 1_000_000), paths=receiver
    )
    keyring = Keyring(settings.server.keys(), found.users)
    sessions = SessionStore(settings.server.session_hours, found.kb.store)
    guesses = GuessLimit(settings.server.max_auth_failures)
    app.add_middleware(BearerAuth, keyring=keyring, sessions=sessions, guesses=guesses)
    if not keyring.required() and not any_host:  # keyless: loopback names only (no DNS rebinding)
        app.add_middleware(LoopbackHosts)

    @app.get("/health", tags=["health"])
    def health() -> Result[dict[str, str]]:
        """Liveness probe; the one route that needs no key."""
        return ok({"status": "ok", "version": __version__})

    app.include_router(evaluate.router, prefix=f"{API_PREFIX}/evaluate")
    app.include_router(evaluate.router, prefix="/api/v1/evaluate", include_in_schema=False)
    app.include_router(runs.router, prefix=f"{API_PREFIX}/evaluate")
    app.include_router(review.router, prefix=f"{API_PREFIX}/evaluate")
    app.include_router(knowledge.router, prefix=f"{API_PREFIX}/knowledge")
    app.include_router(testsets.router, prefix=f"{API_PREFIX}/knowledge")
    app.include_router(resources.router, prefix=API_PREFIX)
    app.include_router(users.router, prefix=API_PREFIX)
    app.include_router(labels.router, prefix=API_PREFIX)
    app.include_router(traces.router, prefix=API_PREFIX)
    app.include_router(traces.receiver)  # OTLP/HTTP's own path
    app.include_router(online.router, prefix=API_PREFIX)
    app.include_router(monitor.router, prefix=API_PREFIX)
    # DB-GPT's built evaluation page (its /evaluation) and the calls of its frame
    app.include_router(dbgpt_page.router, prefix="/api/v1/evaluate", include_in_schema=False)
    app.include_router(dbgpt_page.frame_router, prefix="/api/v1", include_in_schema=False)
    mount_dashboard(app, keyring, sessions, guesses)
    mount_docs(app)
    app.state.route_rules = endpoint_rules(app)
    app.openapi = _openapi_with_bearer(app)  # type: ignore[method-assign]
    return app
