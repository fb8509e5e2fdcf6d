"""Dashboard sessions: the key form trades a valid key for a random session id kept in an
HttpOnly cookie (never the key itself), with a CSRF token the page sends back as a header on
every request that changes something. Kept in memory: a restarted server asks for the key again.

The cookie is ``__Host-ragmeter_session`` (Secure, Path=/, no Domain) over https and on a
loopback address, which browsers treat as secure over plain http too: no other host, no
sibling domain and no plain-http page can set or overwrite it. Over plain http on a network
address a browser drops Secure cookies, so there it is ``ragmeter_session`` without Secure.
Browsers do not keep cookies apart by port (RFC 6265, section 8.5): another server on the same
host name receives the cookie; serve the dashboard on a host name of its own over https where
other services on that host are not trusted."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from starlette.responses import JSONResponse

from ragmeter.service.envelope import error_response
from ragmeter.store.db import Store
from ragmeter.store.models import DashboardSessionRecord
from ragmeter.store.users import Role, User

__all__ = [
    "COOKIE",
    "CSRF_HEADER",
    "MAX_SESSIONS",
    "PLAIN_COOKIE",
    "GuessLimit",
    "Session",
    "SessionStore",
    "cookie_name",
    "is_loopback_host",
    "too_many_guesses",
]

#: the cookie holding the session id, where browsers keep Secure cookies (https, loopback)
COOKIE = "__Host-ragmeter_session"
#: the cookie holding it over plain http on a network address (no Secure, so no prefix)
PLAIN_COOKIE = "ragmeter_session"
#: the header a state-changing request authorised by the cookie must carry
CSRF_HEADER = "X-CSRF-Token"
#: live sessions kept at most; past it the oldest ends (only key holders can open one)
MAX_SESSIONS = 10_000


def is_loopback_host(header: str) -> bool:
    """Whether a Host header names this machine: ``localhost`` or a loopback address, with or
    without a port (``127.0.0.1:5670``, ``[::1]:5670``)."""
    host = header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else ""
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    host = host.rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cookie_name(scheme: str, host: str) -> str:
    """The session cookie for a request of ``scheme`` to ``host`` (its Host header): the
    ``__Host-`` one wherever a browser keeps a Secure cookie, the plain one elsewhere."""
    return COOKIE if scheme in ("https", "wss") or is_loopback_host(host) else PLAIN_COOKIE


@dataclass(frozen=True)
class Session:
    """One signed-in browser: its id (the cookie), its CSRF token, when it ends (epoch seconds),
    and the user whose key opened it (the session acts as that user)."""

    id: str
    csrf: str
    expires: float
    user: User


class SessionStore:
    """Sessions by id in the store (so every replica sharing it knows them), ended by
    ``end``, by expiry after ``hours``, or as the oldest past ``MAX_SESSIONS``. The store
    keeps the SHA-256 of a session's id, never the id (the cookie) itself."""

    def __init__(self, hours: float, store: Store) -> None:
        self.seconds = hours * 3600.0
        self.store = store

    def open(self, user: User) -> Session:
        """A new session of ``user`` with fresh random id and CSRF token."""
        now = time.time()
        session = Session(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), now + self.seconds, user
        )
        table = DashboardSessionRecord
        with self.store.session() as db:
            db.execute(delete(table).where(table.expires_at <= now))
            count = db.scalar(select(func.count()).select_from(table)) or 0
            if count >= MAX_SESSIONS:  # the oldest go
                oldest = select(table.id_hash).order_by(table.expires_at)
                doomed = oldest.limit(count - MAX_SESSIONS + 1).scalar_subquery()
                db.execute(delete(table).where(table.id_hash.in_(doomed)))
            db.add(
                table(
                    id_hash=_hashed(session.id),
                    csrf=session.csrf,
                    expires_at=session.expires,
                    user_name=user.name,
                    role=user.role.value,
                    key_prefix=user.key_prefix,
                )
            )
            db.commit()
        return session

    def get(self, session_id: str) -> Session | None:
        """The live session with this id, or None (unknown, ended or expired)."""
        if not session_id:
            return None
        with self.store.session() as db:
            found = db.get(DashboardSessionRecord, _hashed(session_id))
        if found is None or found.expires_at <= time.time():
            return None
        user = User(found.user_name, Role(found.role), key_prefix=found.key_prefix)
        return Session(session_id, found.csrf, found.expires_at, user)

    def end(self, session_id: str) -> None:
        table = DashboardSessionRecord
        with self.store.session() as db:
            db.execute(delete(table).where(table.id_hash == _hashed(session_id)))
            db.commit()

    @staticmethod
    def csrf_ok(session: Session, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), session.csrf.encode())


def _hashed(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


#: the window ``GuessLimit`` counts wrong keys in, in seconds
GUESS_WINDOW_S = 60.0
#: client addresses ``GuessLimit`` tracks at most; past it the one seen least recently is dropped
MAX_TRACKED = 10_000


class GuessLimit:
    """Wrong keys per client address: past ``limit`` in a minute, that address is refused
        (429) whatever it presents until the minute has passed, so keys cannot be guessed at the
        server's speed. Only requests that present a key count (as an Authorization header or
    through the key form). Thread-safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._wrong: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait(self, client: str) -> float:
        """Seconds ``client`` must wait before it may present a key again (0: it may now)."""
        now = time.monotonic()
        with self._lock:
            times = self._wrong.get(client)
            if times is None:
                return 0.0
            while times and times[0] <= now - GUESS_WINDOW_S:
                times.popleft()
            if not times:
                del self._wrong[client]
                return 0.0
            return times[0] + GUESS_WINDOW_S - now if len(times) >= self.limit else 0.0

    def wrong(self, client: str) -> None:
        """``client`` presented a wrong key."""
        now = time.monotonic()
        with self._lock:
            times = self._wrong.pop(client, None) or deque(maxlen=self.limit)
            times.append(now)
            self._wrong[client] = times  # last seen last
            while len(self._wrong) > MAX_TRACKED:
                self._wrong.pop(next(iter(self._wrong)))


def too_many_guesses(wait: float) -> JSONResponse:
    """The 429 for a client address past ``[server] max_auth_failures`` wrong keys a minute."""
    seconds = max(1, math.ceil(wait))
    return error_response(
        429,
        "too_many_requests",
        f"too many wrong API keys from this address: try again in {seconds} s "
        "([server] max_auth_failures a minute)",
        headers={"Retry-After": str(seconds)},
    )
