"""No route answers without a key: every path in the OpenAPI schema (and the docs, the schema
itself and unknown paths) is 401 in the envelope, except /health."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.helpers import run
from tests.integration.service import KEY, ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("auth-home")
    # every route is tried with a wrong key: more than the default guesses a minute allow
    # (the throttle has its own test in tests/security/test_dashboard_auth.py)
    (home / "ragmeter.toml").write_text("[server]\nmax_auth_failures = 100000\n", "utf-8")
    with ServiceProcess(home) as server:
        yield server


def _operations(service: ServiceProcess) -> list[tuple[str, str]]:
    schema = httpx.get(
        f"{service.url}/openapi.json", headers={"Authorization": f"Bearer {KEY}"}
    ).json()
    out = []
    for path, methods in schema["paths"].items():
        for method in methods:
            out.append((method.upper(), re.sub(r"\{[^}]+\}", "x", path)))
    return out


def test_every_route_needs_a_key(service: ServiceProcess) -> None:
    operations = _operations(service)
    routers = {path.split("/")[4] for _m, path in operations if path.startswith("/api/v2/serve/")}
    assert routers >= {"evaluate", "knowledge", "prompts", "apps", "datasets", "models"}
    extra = [
        ("POST", "/api/v1/evaluate/evaluation"),
        ("GET", "/docs"),
        ("GET", "/openapi.json"),
        ("GET", "/no/such/path"),
    ]
    for method, path in [*operations, *extra]:
        if path == "/health":
            continue
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
            response = httpx.request(method, service.url + path, headers=headers, json={})
            assert response.status_code == 401, (method, path, headers, response.text)
            assert "Bearer" in failure(response, 401)
            assert response.headers["www-authenticate"] == "Bearer"


def test_health_needs_none_and_a_good_key_passes(service: ServiceProcess) -> None:
    assert data(httpx.get(f"{service.url}/health"))["status"] == "ok"
    with service.client() as http:
        assert data(http.get("/evaluate/scenes"))
    second = httpx.get(f"{service.base}/models", headers={"Authorization": "Bearer second-key"})
    assert second.status_code == 401


def test_several_keys_from_the_config_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ragmeter.toml").write_text('[server]\napi_keys = ["alpha", "beta"]\n', "utf-8")
    with ServiceProcess(home, keys=None) as server:
        for key, status in (("alpha", 200), ("beta", 200), ("gamma", 401)):
            response = httpx.get(
                f"{server.base}/models", headers={"Authorization": f"Bearer {key}"}
            )
            assert response.status_code == status


def test_without_keys_loopback_is_open_and_other_addresses_are_refused(tmp_path: Path) -> None:
    with ServiceProcess(tmp_path / "open", keys=None) as server:
        assert data(httpx.get(f"{server.base}/evaluate/scenes"))
    refused = run("serve", "--host", "0.0.0.0", "--port", "1", home=tmp_path / "refused")
    assert refused.returncode == 2
    assert "refusing to listen on 0.0.0.0 with no API keys" in refused.stderr
    assert "--insecure-no-auth" in refused.stderr
    assert "Set [server] api_keys" in refused.stderr  # brackets are text, not markup
