"""``ragmeter serve``: uvicorn on the app, refusing to listen beyond loopback without keys.
A stopping server gives requests ``[server] shutdown_timeout`` seconds, tells uploads to stop
at once, and its access log never shows query strings (they may carry secrets)."""

from __future__ import annotations

import errno
import ipaddress
import logging
import math
import socket
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any

from ragmeter.config import Settings, load_settings
from ragmeter.errors import ConfigError

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "DEFAULT_PORT",
    "QueryStringFilter",
    "check_bind",
    "check_port",
    "forwarded_options",
    "is_loopback",
    "serve",
]

DEFAULT_PORT = 5670  # DB-GPT's, so its clients' default api_base works unchanged


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere


def check_bind(
    host: str, settings: Settings, insecure_no_auth: bool, *, has_users: bool = False
) -> None:
    """ConfigError when the server would listen beyond loopback with no API keys (configured,
    or of users in the store: ``has_users``)."""
    if settings.server.keys() or has_users or is_loopback(host) or insecure_no_auth:
        return
    raise ConfigError(
        f"refusing to listen on {host} with no API keys: anyone who can reach it could run "
        "evaluations and read your data. Set [server] api_keys in ragmeter.toml or "
        "$RAGMETER_API_KEYS, add a user with 'ragmeter users add NAME --role admin', bind "
        "127.0.0.1, or pass --insecure-no-auth"
    )


def _has_users(settings: Settings) -> bool:
    from ragmeter.store.db import open_store
    from ragmeter.store.users import UserStore

    return UserStore(open_store(settings.store_url())).count() > 0


def check_port(host: str, port: int) -> None:
    """ConfigError in one line when ``port`` on ``host`` cannot be bound (another server
    listens there), checked as uvicorn binds, before the dashboard's address is printed."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is in use; pass --port") from None
            reason = exc.strerror or str(exc)
            raise ConfigError(f"cannot listen on {host}:{port}: {reason}") from None


def forwarded_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options for ``X-Forwarded-For``/``-Proto``: read only from the peers in
    ``[server] trusted_proxies``, and not at all when it is empty (uvicorn's own default
    trusts 127.0.0.1, where any local process could forge its address)."""
    trusted = settings.server.trusted_proxies
    if not trusted:
        return {"proxy_headers": False, "forwarded_allow_ips": []}
    return {"proxy_headers": True, "forwarded_allow_ips": list(trusted)}


class QueryStringFilter(logging.Filter):
    """Drops the query string from uvicorn's access log lines (``GET /x?token=... 200``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path = args[2].split("?", 1)[0]
            record.args = (*args[:2], path, *args[3:])
        return True


def _server(config: uvicorn.Config, stopping: threading.Event) -> uvicorn.Server:
    """uvicorn's server, which also sets ``stopping`` when a signal asks it to stop."""
    import uvicorn

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            stopping.set()  # uploads stop at their next file or batch, not at the deadline
            super().handle_exit(sig, frame)

    return _Server(config)


def serve(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    insecure_no_auth: bool = False,
    settings: Settings | None = None,
    log_level: str = "info",
) -> None:
    """Run the service until interrupted (SIGINT or SIGTERM)."""
    import uvicorn

    from ragmeter.service.app import create_app

    settings = settings or load_settings()
    has_users = _has_users(settings)
    check_bind(host, settings, insecure_no_auth, has_users=has_users)
    check_port(host, port)
    if not settings.server.keys() and not has_users:
        logging.getLogger(__name__).warning("no API keys configured: every request is allowed")
    app = create_app(settings, any_host=insecure_no_auth and not is_loopback(host))
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=math.ceil(settings.server.shutdown_timeout),
        **forwarded_options(settings),
    )
    logging.getLogger("uvicorn.access").addFilter(QueryStringFilter())  # after uvicorn's setup
    _server(config, app.state.services.stopping).run()
