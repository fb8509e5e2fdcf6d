"""``ragmeter serve --open``: open the dashboard in a browser once the server answers."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
import webbrowser

__all__ = ["dashboard_url", "open_when_up"]


def dashboard_url(host: str, port: int) -> str:
    """The dashboard's address on this machine for a server listening on ``host``."""
    if host in ("0.0.0.0", "::", "[::]", ""):
        host = "127.0.0.1"  # every interface: loopback reaches it
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def _wait_then_open(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "health", timeout=1):
                break
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    else:
        return  # the server never came up; it says why itself
    webbrowser.open(url)


def open_when_up(url: str, timeout: float = 60.0) -> threading.Thread:
    """Start a daemon thread that opens ``url`` in a browser once ``/health`` answers."""
    thread = threading.Thread(
        target=_wait_then_open, args=(url, time.monotonic() + timeout), daemon=True
    )
    thread.start()
    return thread
