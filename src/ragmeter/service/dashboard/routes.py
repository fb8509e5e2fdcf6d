"""The dashboard's routes: the page at ``/``, its static files under ``/ui/assets/``, and the
session routes its key form and sign-out button call. The page and its files need no key (they
hold no data); every data route does, as a Bearer key or as the session cookie."""

from __future__ import annotations

import hmac
from importlib import resources
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from ragmeter.service.dashboard.sessions import (
    COOKIE,
    CSRF_HEADER,
    GuessLimit,
    SessionStore,
    cookie_name,
    too_many_guesses,
)
from ragmeter.service.envelope import ApiError, Result, ok

__all__ = ["ASSETS", "OPEN_PREFIX", "SESSION_PATH", "mount_dashboard"]

#: where the page's files are served from
ASSETS = "/ui/assets"
#: the key form posts here; the page asks here whether it must show the form
SESSION_PATH = "/ui/session"
#: paths under it are served without a key
OPEN_PREFIX = ASSETS + "/"
STATIC = Path(str(resources.files("ragmeter.service.dashboard") / "static"))
#: the page runs only our own files: no inline script, nothing from another origin
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


class KeyIn(BaseModel):
    """The key form's body (a POST body, so the key is never in a URL or a log line)."""

    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1, max_length=1000)


class SessionOut(BaseModel):
    """Whether this server wants a key, whether this browser has a live session, and the
    token to send as ``X-CSRF-Token`` on every POST, PUT, PATCH or DELETE."""

    auth_required: bool
    signed_in: bool
    csrf_header: str = CSRF_HEADER
    csrf_token: str | None = None


def _cookie(request: Request) -> str:
    return cookie_name(request.url.scheme, request.headers.get("host", ""))


def _router(keys: list[str], sessions: SessionStore, guesses: GuessLimit) -> APIRouter:
    router = APIRouter(tags=["dashboard"], include_in_schema=False)

    @router.get("/")
    def page() -> FileResponse:
        """The dashboard (one page; its views are hash routes, ``#/runs?state=done``)."""
        headers = {"Content-Security-Policy": CSP, "Cache-Control": "no-cache"}
        return FileResponse(STATIC / "index.html", headers=headers)

    @router.get(SESSION_PATH)
    def session_state(request: Request) -> Result[SessionOut]:
        found = sessions.get(request.cookies.get(_cookie(request), ""))
        if not keys:
            return ok(SessionOut(auth_required=False, signed_in=True))
        token = found.csrf if found else None
        return ok(SessionOut(auth_required=True, signed_in=found is not None, csrf_token=token))

    @router.post(SESSION_PATH, response_model=None)
    def sign_in(
        body: KeyIn, request: Request, response: Response
    ) -> Result[SessionOut] | JSONResponse:
        """Trade a key for a session cookie (HttpOnly, SameSite=Strict, Path=/; Secure and
        ``__Host-`` prefixed over https and on loopback: ``sessions.cookie_name``)."""
        client = request.client.host if request.client else ""
        if wait := guesses.wait(client):
            return too_many_guesses(wait)
        given = body.key.encode()
        matches = [hmac.compare_digest(given, k.encode()) for k in keys]  # every one, always
        if not any(matches):
            guesses.wrong(client)
            raise ApiError(
                401,
                "unauthorized",
                "wrong API key: use one of [server] api_keys or $RAGMETER_API_KEYS",
            )
        session = sessions.open()
        name = _cookie(request)
        response.set_cookie(
            name,
            session.id,
            max_age=int(sessions.seconds),
            path="/",
            httponly=True,
            samesite="strict",
            secure=name == COOKIE,  # required by the __Host- prefix
        )
        return ok(SessionOut(auth_required=True, signed_in=True, csrf_token=session.csrf))

    @router.post("/ui/logout")
    def sign_out(request: Request, response: Response) -> Result[SessionOut]:
        """End this browser's session (authorised like any change: cookie and CSRF header)."""
        name = _cookie(request)
        sessions.end(request.cookies.get(name, ""))
        response.delete_cookie(
            name, path="/", secure=name == COOKIE, httponly=True, samesite="strict"
        )
        return ok(SessionOut(auth_required=bool(keys), signed_in=not keys))

    return router


def mount_dashboard(
    app: FastAPI, keys: list[str], sessions: SessionStore, guesses: GuessLimit
) -> None:
    """Serve the dashboard on ``app``: the page, its files and the session routes (the key
    form counts wrong keys with the API's ``guesses``)."""
    app.include_router(_router(keys, sessions, guesses))
    app.mount(ASSETS, StaticFiles(directory=STATIC), name="dashboard-assets")
