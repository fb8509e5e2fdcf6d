"""The one error hierarchy: every failure ragmeter raises on purpose is a ``RagmeterError``."""

from __future__ import annotations

import re
import urllib.parse
from typing import Literal

__all__ = [
    "ConfigError",
    "ConflictError",
    "DatasetError",
    "EmbeddingError",
    "ErrorKind",
    "JudgeError",
    "LimitError",
    "MetricError",
    "NotFoundError",
    "RagmeterError",
    "StoreError",
    "TraceError",
    "clip",
    "error_kind",
    "public_url",
    "redact",
]


class RagmeterError(Exception):
    """Root of every error ragmeter raises on purpose."""

    def __reduce__(self) -> tuple[object, ...]:
        # rebuilt with its attributes, not by calling ``__init__`` again (which takes
        # keyword arguments), when it crosses to another process (a Ray worker's, a
        # download's)
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(
    cls: type[RagmeterError], args: tuple[object, ...], state: dict[str, object]
) -> RagmeterError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigError(RagmeterError):
    """A setting, option or combination of options is invalid."""


class LimitError(ConfigError):
    """Input over a size, count, depth or time limit. ``setting`` names the limit (such as
    ``[server] max_rows``) and ``status`` is how the service answers (400, or 413 for sizes)."""

    def __init__(self, message: str, *, setting: str, status: int = 400) -> None:
        super().__init__(f"{message} ({setting})")
        self.setting = setting
        self.status = status


class TraceError(ConfigError):
    """An OTLP export request that cannot be read: malformed protobuf or JSON, a bad trace or
    span id, a content type or encoding the receiver does not take. ``status`` is how the
    receiver answers (400, or 415 for the media type or content encoding)."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ConflictError(ConfigError):
    """A name or id is already taken, or a thing is in a state that forbids the change."""


class DatasetError(RagmeterError):
    """A dataset row is malformed or lacks what a chosen metric needs.

    ``row`` is the 0-based row index (the ``row_index`` of results), ``field`` the canonical
    field name, ``source`` the file or object the rows came from and ``line`` the line in
    that file, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        row: int | None = None,
        field: str | None = None,
        source: str | None = None,
        line: int | None = None,
    ) -> None:
        self.row = row
        self.field = field
        self.source = source
        self.line = line
        self.reason = message
        super().__init__(self._format(message))

    def _format(self, message: str) -> str:
        where: list[str] = []
        if self.source is not None:
            where.append(self.source if self.line is None else f"{self.source} line {self.line}")
        if self.row is not None:
            where.append(f"row {self.row}" if not where else f"(row {self.row})")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        prefix = " ".join(where)
        return f"{prefix}: {message}" if prefix else message


class MetricError(RagmeterError):
    """A metric name cannot be resolved, or a metric is defined or parametrised wrongly."""


class EmbeddingError(RagmeterError):
    """An embedder could not be loaded or failed to embed."""


class JudgeError(RagmeterError):
    """A judge model could not be reached or configured."""


class StoreError(RagmeterError):
    """The run store failed."""


class NotFoundError(RagmeterError, KeyError):
    """A named thing (space, run, prompt, metric, ...) does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def clip(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters (ending in "..."), to quote a caller's name or id
    in a message without echoing whatever length they sent."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: ``scheme://user:password@`` in a URL (the userinfo ends at the last ``@`` before a ``/``)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/@]*(?:@[^\s/@]*)*@")


def public_url(url: str) -> str:
    """``url`` without what may be secret: the ``user:password@`` part and the query."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(an unreadable URL)"
    netloc = parts.netloc.rpartition("@")[2]
    query = "..." if parts.query else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact(text: str) -> str:
    """``text`` with the ``user:password@`` part of every URL removed, so a message may be
    shown to a caller or written to a log without the credentials of a store or endpoint."""
    return _USERINFO.sub(r"\1", text)


#: why a result has no score: ``upstream`` (a judge, embedder or app failed or was unreachable;
#: worth retrying), ``input`` (the row's data decides it, e.g. no relevant item), ``metric``
#: (a metric raised or returned NaN: a bug)
ErrorKind = Literal["upstream", "input", "metric"]


def error_kind(exc: BaseException) -> ErrorKind:
    """The kind of a null score caused by ``exc``: a judge, embedder or network failure is
    ``upstream``, a row over a limit (a judge prompt too long) ``input``, anything else a
    metric's ``metric`` bug."""
    if isinstance(exc, JudgeError | EmbeddingError | OSError):  # OSError: network, timeouts
        return "upstream"
    if isinstance(exc, LimitError):
        return "input"
    return "metric"
