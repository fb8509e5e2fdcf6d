"""DB-GPT's response envelope ``{success, err_code, err_msg, data}`` for every answer, and the
mapping of errors to it: a 4xx for what the caller can fix, naming the field at fault."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragmeter._public import internal_reference, public_text
from ragmeter.errors import (
    ConfigError,
    ConflictError,
    DatasetError,
    EmbeddingError,
    JudgeError,
    LimitError,
    MetricError,
    NotFoundError,
    RagmeterError,
)

__all__ = [
    "ApiError",
    "Result",
    "error_response",
    "install_error_handlers",
    "internal_error",
    "ok",
]

log = logging.getLogger(__name__)
T = TypeVar("T")


class Result(BaseModel, Generic[T]):
    """Every answer: ``success`` with ``data``, or ``err_code`` and ``err_msg``."""

    success: bool
    err_code: str | None = None
    err_msg: str | None = None
    data: T | None = None


def ok(data: T) -> Result[T]:
    return Result[T](success=True, data=data)


class ApiError(Exception):
    """An error with its HTTP status and code, raised by the routes themselves."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.data = data
        self.headers = dict(headers or {})


_STATUS: list[tuple[type[BaseException], int, str]] = [
    (DatasetError, 400, "invalid_request"),
    (MetricError, 400, "invalid_request"),
    (NotFoundError, 404, "not_found"),
    (ConflictError, 409, "conflict"),
    (ConfigError, 400, "invalid_request"),
    (JudgeError, 502, "upstream_error"),
    (EmbeddingError, 502, "upstream_error"),
]
_HTTP_CODES = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


def error_response(
    status: int, code: str, message: str, data: Any = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A failure in the envelope, its message made public (``public_text``)."""
    body = Result[Any](success=False, err_code=code, err_msg=public_text(message), data=data)
    return JSONResponse(
        body.model_dump(mode="json"), status_code=status, headers=dict(headers or {})
    )


def internal_error(
    exc: BaseException, data: Any = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """A 500 that tells the caller only a reference; the details (SQL, paths, URLs) go to
    the server's log under that reference."""
    message = internal_reference(exc)
    return error_response(500, "internal_error", message, data, headers)


def _ragmeter_error(exc: RagmeterError) -> JSONResponse:
    if isinstance(exc, LimitError):
        return error_response(exc.status, "limit_exceeded", str(exc))
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            return error_response(status, code, str(exc))
    return internal_error(exc)  # the store or a bug: nothing the caller can fix


def _field(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] == "body":
        parts = parts[1:]
    return ".".join(parts) or "body"


def _validation_message(exc: RequestValidationError) -> str:
    messages = []
    for error in exc.errors()[:3]:
        messages.append(f"{_field(tuple(error.get('loc', ())))}: {error.get('msg', 'invalid')}")
    return "; ".join(messages)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error in the envelope."""

    async def on_api_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        # a route's own error, a 500 included (a run's internal failure, already logged under
        # the reference its message names), says what the route says
        return error_response(exc.status, exc.code, exc.message, exc.data, exc.headers)

    async def on_ragmeter(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RagmeterError)
        return _ragmeter_error(exc)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, "invalid_request", _validation_message(exc))

    async def on_http(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail), headers=exc.headers)

    async def on_any(_request: Request, exc: Exception) -> JSONResponse:
        return internal_error(exc)

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RagmeterError, on_ragmeter)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_any)
