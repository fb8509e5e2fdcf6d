"""The dashboard's routes: the page at ``/``, its static files under ``/ui/assets/``, and the
session routes its key form and sign-out button call. The page and its files need no key (they
hold no data); every data route does, as a Bearer key or as the session cookie."""

from __future__ import annotations

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
    Session,
    SessionStore,
    cookie_name,
    too_many_guesses,
)
from ragmeter.service.envelope import ApiError, Result, ok
from ragmeter.service.identity import LOCAL_USER, Keyring

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
    #: who the session acts as, and their role (``docs/security.md``)
    user: str | None = None
    role: str | None = None


def _cookie(request: Request) -> str:
    return cookie_name(request.url.scheme, request.headers.get("host", ""))


def _signed_in(session: Session) -> SessionOut:
    return SessionOut(
        auth_required=True,
        signed_in=True,
        csrf_token=session.csrf,
        user=session.user.name,
        role=session.user.role.value,
    )


def _router(keyring: Keyring, sessions: SessionStore, guesses: GuessLimit) -> APIRouter:
    router = APIRouter(tags=["dashboard"], include_in_schema=False)

    @router.get("/")
    def page() -> FileResponse:
        """The dashboard (one page; its views are hash routes, ``#/runs?state=done``)."""
        headers = {"Content-Security-Policy": CSP, "Cache-Control": "no-cache"}
        return FileResponse(STATIC / "index.html", headers=headers)

    @router.get(SESSION_PATH)
    def session_state(request: Request) -> Result[SessionOut]:
        found = sessions.get(request.cookies.get(_cookie(request), ""))
        if not keyring.required():
            local = LOCAL_USER
            return ok(
                SessionOut(
                    auth_required=False, signed_in=True, user=local.name, role=local.role.value
                )
            )
        if found is None or not keyring.still_valid(found.user):
            return ok(SessionOut(auth_required=True, signed_in=False))
        return ok(_signed_in(found))

    @router.post(SESSION_PATH, response_model=None)
    def sign_in(
        body: KeyIn, request: Request, response: Response
    ) -> Result[SessionOut] | JSONResponse:
        """Trade a key for a session cookie (HttpOnly, SameSite=Strict, Path=/; Secure and
        ``__Host-`` prefixed over https and on loopback: ``sessions.cookie_name``)."""
        client = request.client.host if request.client else ""
        if wait := guesses.wait(client):
            return too_many_guesses(wait)
        user = keyring.resolve(body.key)
        if user is None:
            guesses.wrong(client)
            raise ApiError(
                401,
                "unauthorized",
                "wrong API key (or a disabled user's): use one of [server] api_keys, "
                "$RAGMETER_API_KEYS or a key 'ragmeter users add' printed",
            )
        session = sessions.open(user)
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
        return ok(_signed_in(session))

    @router.post("/ui/logout")
    def sign_out(request: Request, response: Response) -> Result[SessionOut]:
        """End this browser's session (authorised like any change: cookie and CSRF header)."""
        name = _cookie(request)
        sessions.end(request.cookies.get(name, ""))
        response.delete_cookie(
            name, path="/", secure=name == COOKIE, httponly=True, samesite="strict"
        )
        required = keyring.required()
        return ok(SessionOut(auth_required=required, signed_in=not required))

    return router


def mount_dashboard(
    app: FastAPI, keyring: Keyring, sessions: SessionStore, guesses: GuessLimit
) -> None:
    """Serve the dashboard on ``app``: the page, its files and the session routes (the key
    form counts wrong keys with the API's ``guesses``)."""
    app.include_router(_router(keyring, sessions, guesses))
    app.mount(ASSETS, StaticFiles(directory=STATIC), name="dashboard-assets")
