"""Who holds a key: a configured key (``[server] api_keys``, ``$RAGMETER_API_KEYS``) is the
admin ``config``; a user's key (``ragmeter users add``) is that user; with neither, a
loopback-only server treats every caller as the admin ``local``."""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Sequence

from ragmeter.store.users import Role, User, UserStore

__all__ = ["CONFIG_USER", "LOCAL_USER", "Keyring"]

#: who a configured key acts as
CONFIG_USER = User("config", Role.ADMIN)
#: who every caller of a server with no keys and no users acts as (it answers loopback only)
LOCAL_USER = User("local", Role.ADMIN)
#: how long a server without users waits before asking the store again whether it has some
_RECHECK_S = 1.0


class Keyring:
    """Resolves keys to users: the configured ones first (compared with each, always, so
    timing does not tell which one nearly matched), then the store's."""

    def __init__(self, keys: Sequence[str], users: UserStore) -> None:
        self.keys = [k.encode() for k in keys]
        self.users = users
        self._has_users = False
        self._checked = -_RECHECK_S
        self._lock = threading.Lock()

    def required(self) -> bool:
        """Whether requests need a key: a key is configured or a user exists (a user added
        while the server runs counts within a second)."""
        if self.keys or self._has_users:
            return True
        now = time.monotonic()
        with self._lock:
            if now - self._checked >= _RECHECK_S:
                self._checked = now
                self._has_users = self.users.count() > 0
        return self._has_users

    def configured(self, key: str) -> User | None:
        """``CONFIG_USER`` if ``key`` is a configured key, else None."""
        given = key.encode()
        matches = [hmac.compare_digest(given, k) for k in self.keys]
        return CONFIG_USER if any(matches) else None

    def resolve(self, key: str) -> User | None:
        """The user holding ``key``; None for a wrong, disabled or replaced key."""
        return self.configured(key) or self.users.resolve(key)

    def still_valid(self, user: User) -> bool:
        """Whether a session opened by ``user`` may go on: its user is not disabled and its
        key not replaced since (a configured key's sessions last their time)."""
        if user.key_prefix is None:
            return True
        return self.users.active(user.name, user.key_prefix)
