"""Schemathesis against the live server's /openapi.json: generated requests for every
operation (a bounded number each) never get a 5xx."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.integration.service import KEY, ServiceProcess

pytestmark = pytest.mark.both_stores

#: examples per operation; RAGMETER_FUZZ_EXAMPLES=300 for a longer hunt (passed at 300)
EXAMPLES = int(os.environ.get("RAGMETER_FUZZ_EXAMPLES", "12"))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path_factory.mktemp("fuzz-home")) as server:
        with server.client() as http:  # something for the path parameters to find
            http.post("/knowledge/spaces", json={"name": "s1", "embedder": "hashed"})
            http.post("/prompts", json={"code": "p1", "template": "{query}{context}{answer}"})
        yield server


def test_no_operation_answers_5xx(service: ServiceProcess) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    raw = httpx.get(f"{service.url}/openapi.json", headers=auth).json()
    schema = schemathesis.openapi.from_dict(raw)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    failures: list[str] = []
    calls = 0
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case) -> None:
            nonlocal calls
            calls += 1
            response = case.call(base_url=service.url, headers=auth, timeout=60)
            if response.status_code >= 500:
                label = f"{case.method} {case.path}"
                failures.append(f"{label}: {response.status_code} {response.text[:200]}")

        check()
    assert calls >= len(operations)
    assert not failures, "\n".join(failures[:10])
