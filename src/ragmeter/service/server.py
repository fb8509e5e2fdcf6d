"""``ragmeter serve``: uvicorn on the app, refusing to listen beyond loopback without keys."""

from __future__ import annotations

import ipaddress
import logging

from ragmeter.config import Settings, load_settings
from ragmeter.errors import ConfigError

__all__ = ["DEFAULT_PORT", "check_bind", "is_loopback", "serve"]

DEFAULT_PORT = 5670  # DB-GPT's, so its clients' default api_base works unchanged


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere


def check_bind(host: str, settings: Settings, insecure_no_auth: bool) -> None:
    """ConfigError when the server would listen beyond loopback with no API keys."""
    if settings.server.keys() or is_loopback(host) or insecure_no_auth:
        return
    raise ConfigError(
        f"refusing to listen on {host} with no API keys: anyone who can reach it could run "
        "evaluations and read your data. Set [server] api_keys in ragmeter.toml or "
        "$RAGMETER_API_KEYS, bind 127.0.0.1, or pass --insecure-no-auth"
    )


def serve(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    insecure_no_auth: bool = False,
    settings: Settings | None = None,
    log_level: str = "info",
) -> None:
    """Run the service until interrupted."""
    import uvicorn

    from ragmeter.service.app import create_app

    settings = settings or load_settings()
    check_bind(host, settings, insecure_no_auth)
    if not settings.server.keys():
        logging.getLogger(__name__).warning("no API keys configured: every request is allowed")
    app = create_app(settings, any_host=insecure_no_auth and not is_loopback(host))
    uvicorn.run(app, host=host, port=port, log_level=log_level)
