"""Dashboard sessions: the key form trades a valid key for a random session id kept in an
HttpOnly cookie (never the key itself), with a CSRF token the page sends back as a header on
every request that changes something. Kept in memory: a restarted server asks for the key again."""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

__all__ = ["COOKIE", "CSRF_HEADER", "MAX_SESSIONS", "Session", "SessionStore"]

#: the cookie holding the session id
COOKIE = "ragmeter_session"
#: the header a state-changing request authorised by the cookie must carry
CSRF_HEADER = "X-CSRF-Token"
#: live sessions kept at most; past it the oldest ends (only key holders can open one)
MAX_SESSIONS = 10_000


@dataclass(frozen=True)
class Session:
    """One signed-in browser: its id (the cookie), its CSRF token, when it ends (monotonic)."""

    id: str
    csrf: str
    expires: float


class SessionStore:
    """Sessions by id, ended by ``end``, by expiry after ``hours``, or as the oldest past
    ``MAX_SESSIONS``. Thread-safe: the routes run in a thread pool."""

    def __init__(self, hours: float) -> None:
        self.seconds = hours * 3600.0
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(self) -> Session:
        """A new session with fresh random id and CSRF token."""
        now = time.monotonic()
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now + self.seconds)
        with self._lock:
            self._drop_expired(now)
            while len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        """The live session with this id, or None (unknown, ended or expired)."""
        with self._lock:
            found = self._sessions.get(session_id)
            if found is None:
                return None
            if found.expires <= time.monotonic():
                del self._sessions[session_id]
                return None
            return found

    def end(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    @staticmethod
    def csrf_ok(session: Session, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), session.csrf.encode())

    def _drop_expired(self, now: float) -> None:
        for key in [k for k, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[key]
