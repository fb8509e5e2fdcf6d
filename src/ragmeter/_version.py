"""The installed ragmeter's version, as runs record it and file keys include it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["ragmeter_version"]


def ragmeter_version() -> str:
    """The version of the installed ``ragmeter`` package; ``unknown`` in a source tree that
    was never installed."""
    try:
        return version("ragmeter")
    except PackageNotFoundError:
        return "unknown"
