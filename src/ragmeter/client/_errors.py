"""What a call to the service can fail with, split by what the caller does about it, as httpx
splits its errors: not found, conflict, auth, connection; anything else is a ``ClientError``."""

from __future__ import annotations

from typing import Any

from ragmeter.errors import ConflictError, NotFoundError, RagmeterError

__all__ = [
    "ClientAuthError",
    "ClientConflictError",
    "ClientConnectionError",
    "ClientError",
    "ClientNotFoundError",
    "error_for_status",
]


class ClientError(RagmeterError):
    """The service refused or failed a call: ``status`` (HTTP), ``code`` and ``message``
    (the envelope's ``err_code`` and ``err_msg``), ``data`` when it sent some."""

    def __init__(
        self, message: str, *, status: int | None = None, code: str | None = None, data: Any = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}" if status else message)
        self.status = status
        self.code = code
        self.message = message
        self.data = data


class ClientNotFoundError(ClientError, NotFoundError):
    """404: no such run, space, prompt, app or dataset (also a ``NotFoundError``)."""


class ClientConflictError(ClientError, ConflictError):
    """409: the name is taken, or the thing's state forbids the change (a finished run
    cancelled); also a ``ConflictError``."""


class ClientAuthError(ClientError):
    """401 or 403: no key, a key the server does not hold, or a Host it does not serve."""


class ClientConnectionError(ClientError):
    """The server could not be reached or did not answer in time; ``status`` is None."""


_BY_STATUS: dict[int, type[ClientError]] = {
    401: ClientAuthError,
    403: ClientAuthError,
    404: ClientNotFoundError,
    409: ClientConflictError,
}


def error_for_status(
    status: int, message: str, *, code: str | None = None, data: Any = None
) -> ClientError:
    """The error a refusal with HTTP ``status`` raises: its own kind, else ``ClientError``."""
    kind = _BY_STATUS.get(status, ClientError)
    return kind(message, status=status, code=code, data=data)
