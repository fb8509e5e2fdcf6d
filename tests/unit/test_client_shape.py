"""The client's shape: light to import, written once (the blocking client is generated from the
async one and exposes the same methods), its errors split by kind."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragmeter.client import (
    AsyncClient,
    Client,
    ClientAuthError,
    ClientConflictError,
    ClientError,
    ClientNotFoundError,
)
from ragmeter.client._calls import read_envelope
from ragmeter.errors import ConflictError, NotFoundError

ROOT = Path(__file__).resolve().parents[2]
HEAVY = [
    "fastapi",
    "starlette",
    "sqlalchemy",
    "alembic",
    "faiss",
    "torch",
    "openai",
    "numpy",
    "pandas",
    "sentence_transformers",
]


def _loaded_after(statement: str) -> list[str]:
    """Modules in ``sys.modules`` after ``statement`` in a fresh interpreter."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def _top(modules: list[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_the_client_imports_neither_server_nor_engine() -> None:
    loaded = _loaded_after("from ragmeter.client import Client, AsyncClient")
    assert sorted(_top(loaded) & set(HEAVY)) == []
    ours = {m for m in loaded if m.startswith("ragmeter.")}
    assert not {m for m in ours if m.split(".")[1] in ("runs", "service", "knowledge", "store")}
    assert "ragmeter.wire" in ours


def test_wire_imports_only_pydantic_and_errors() -> None:
    loaded = _loaded_after("import ragmeter.wire")
    assert sorted(_top(loaded) & {*HEAVY, "httpx"}) == []
    ours = {m for m in loaded if m.startswith("ragmeter")}
    # the package's own modules (ragmeter.wire.runs, ...) aside
    assert {m for m in ours if not m.startswith("ragmeter.wire.")} == {
        "ragmeter",
        "ragmeter._lazy",  # the package's names load on first use (standard library only)
        "ragmeter.errors",
        "ragmeter.wire",
    }


def test_the_blocking_client_is_what_the_async_one_generates() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/unasync_client.py", "--check"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr


#: the async spelling of a name -> the blocking one
_SYNC_NAMES = {"aclose": "close", "__aenter__": "__enter__", "__aexit__": "__exit__"}


def _methods(cls: type) -> dict[str, Any]:
    """Public methods (and the context manager's) by their blocking name."""
    out: dict[str, Any] = {}
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_") and name not in {"__init__", *_SYNC_NAMES, *_SYNC_NAMES.values()}:
            continue
        out[_SYNC_NAMES.get(name, name)] = member
    return out


def _unasync(annotation: Any) -> str:
    """``AsyncIterator[X]`` as ``Iterator[X]``, ``AsyncClient`` as ``Client``, and so on."""
    return re.sub(r"\bAsync(?=[A-Z])", "", str(annotation))


def _signature(function: Any) -> list[tuple[str, Any, Any, str]]:
    """Parameters as (name, kind, default, annotation), and the return annotation last,
    with the async spellings made sync."""
    signature = inspect.signature(function)
    out = [
        (p.name, p.kind, p.default, _unasync(p.annotation)) for p in signature.parameters.values()
    ]
    return [*out, ("return", None, None, _unasync(signature.return_annotation))]


def _resources(client: object) -> dict[str, type]:
    return {
        name: type(value)
        for name, value in vars(client).items()
        if not name.startswith("_") and type(value).__module__.startswith("ragmeter.client")
    }


def test_both_clients_expose_the_same_methods() -> None:
    blocking, awaited = (
        Client("http://127.0.0.1:9/api/v2"),
        AsyncClient("http://127.0.0.1:9/api/v2"),
    )
    pairs = {"client": (Client, AsyncClient)}
    sync_resources, async_resources = _resources(blocking), _resources(awaited)
    assert set(sync_resources) == set(async_resources) == {
        "runs", "spaces", "prompts", "apps", "datasets", "users", "online", "monitor",
    }  # fmt: skip
    pairs.update({k: (sync_resources[k], async_resources[k]) for k in sync_resources})
    for where, (sync_cls, async_cls) in pairs.items():
        sync_methods, async_methods = _methods(sync_cls), _methods(async_cls)
        assert sorted(sync_methods) == sorted(async_methods), where
        for name, method in async_methods.items():
            twin = sync_methods[name]
            assert _signature(twin) == _signature(method), f"{where}.{name}"
            if name == "__init__":
                continue
            is_async = inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)
            assert is_async, f"AsyncClient {where}.{name} must be async"
            assert not (inspect.iscoroutinefunction(twin) or inspect.isasyncgenfunction(twin))
    assert {"get", "delete", "documents", "chunks", "upload", "retrieve"} <= set(
        _methods(sync_resources["spaces"])
    )
    assert {"upload", "list", "get", "rows"} <= set(_methods(sync_resources["datasets"]))
    blocking.close()


def _envelope(code: str, message: str) -> dict[str, Any]:
    return {"success": False, "err_code": code, "err_msg": message, "data": None}


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, ClientAuthError),
        (403, ClientAuthError),
        (404, ClientNotFoundError),
        (409, ClientConflictError),
        (400, ClientError),
        (502, ClientError),
    ],
)
def test_a_refusal_raises_the_error_of_its_status(status: int, kind: type[ClientError]) -> None:
    with pytest.raises(ClientError) as err:
        read_envelope(status, _envelope("some_code", "what went wrong"))
    assert type(err.value) is kind
    assert (err.value.status, err.value.code, err.value.message) == (
        status,
        "some_code",
        "what went wrong",
    )
    assert str(err.value) == f"{status} some_code: what went wrong"
    assert isinstance(err.value, NotFoundError) == (status == 404)
    assert isinstance(err.value, ConflictError) == (status == 409)


def test_an_answer_that_is_no_envelope_keeps_its_status() -> None:
    with pytest.raises(ClientNotFoundError) as err:
        read_envelope(404, "<html>Not Found</html>")
    assert err.value.status == 404 and "unexpected answer" in err.value.message
    with pytest.raises(ClientError) as plain:
        read_envelope(200, ["not", "an", "envelope"])
    assert type(plain.value) is ClientError and plain.value.status == 200
