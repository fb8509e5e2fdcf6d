"""The web dashboard at ``/`` of ``ragmeter serve``: static HTML, CSS and JavaScript modules
shipped in the wheel (no build step, nothing from a CDN) over the JSON API, and the session its
key form opens."""

from ragmeter.service.dashboard.routes import ASSETS, OPEN_PREFIX, SESSION_PATH, mount_dashboard
from ragmeter.service.dashboard.sessions import (
    COOKIE,
    CSRF_HEADER,
    GuessLimit,
    Session,
    SessionStore,
)

__all__ = [
    "ASSETS",
    "COOKIE",
    "CSRF_HEADER",
    "OPEN_PREFIX",
    "SESSION_PATH",
    "GuessLimit",
    "Session",
    "SessionStore",
    "mount_dashboard",
]
