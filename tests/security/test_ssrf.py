"""Finding 2: an HttpApp made over the API cannot reach loopback, private or link-local hosts
(the server itself, a cloud metadata address) unless the operator allows them; the check is on
the address actually connected, so a DNS answer that changes cannot get around it; and an
error says what failed (status, content type, size) without quoting the target's body."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from ragmeter.apps import AppRefused, HostPolicy, HttpApp
from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import ServiceProcess, data, failure
from tests.security.listener import BODY_SECRET, Listener


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    with Listener() as found:
        yield found


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


def _start(home: Any, judge: ScriptedJudgeServer, server_section: str = "") -> ServiceProcess:
    write_models(home, judge.url)
    if server_section:
        with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
            config.write(f"\n[server]\n{server_section}\n")
    return ServiceProcess(home).start()


@pytest.fixture(scope="module")
def default_service(
    tmp_path_factory: pytest.TempPathFactory, judge: ScriptedJudgeServer
) -> Iterator[ServiceProcess]:
    server = _start(tmp_path_factory.mktemp("ssrf-default"), judge)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def allowing_service(
    tmp_path_factory: pytest.TempPathFactory, judge: ScriptedJudgeServer
) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("ssrf-allowing")
    server = _start(home, judge, 'allow_app_hosts = ["127.0.0.0/8"]')
    yield server
    server.stop()


def _http_app(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "config": {"kind": "http", "url": url, **extra}}


def _evaluate(http: Any, app: str) -> Any:
    body = {
        "scene_key": "app",
        "scene_value": app,
        "context": {"model": "scripted"},
        "evaluate_metrics": ["AnswerRelevancyMetric"],
        "datasets": [{"query": "what is AWEL?"}, {"query": "what are operators?"}],
    }
    return http.post("/evaluate/evaluation", json=body)


def test_internal_destinations_are_refused_by_default(
    default_service: ServiceProcess, listener: Listener
) -> None:
    port = listener.port
    internal = [
        listener.url(),
        f"http://localhost:{port}/ask",
        f"http://[::1]:{port}/ask",
        f"http://0.0.0.0:{port}/ask",
        f"http://2130706433:{port}/ask",  # 127.0.0.1 written as one number
        f"http://127.1:{port}/ask",
        f"{default_service.url}/health",  # the server itself
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://10.1.2.3/ask",
        "http://192.168.0.1/ask",
        "http://[fd00::1]/ask",
    ]
    with default_service.client() as http:
        for index, url in enumerate(internal):
            message = failure(http.post("/apps", json=_http_app(f"in{index}", url)), 400)
            assert "allow_app_hosts" in message and "config.url" in message, (url, message)
    assert not [s for s in listener.seen if s.path == "/ask"]


def test_a_stored_app_pointing_inside_is_refused_when_it_runs(
    default_service: ServiceProcess, listener: Listener, tmp_path: Any
) -> None:
    from tests.integration.helpers import run

    added = run("app", "add", "inside", "--url", listener.url(), home=default_service.home)
    assert added.returncode == 0, added.stderr  # the command line may name any host
    before = len(listener.seen)
    with default_service.client() as http:
        message = failure(_evaluate(http, "inside"), 400)  # a setting to change, not an outage
    assert "may not be reached" in message and "allow_app_hosts" in message
    assert len(listener.seen) == before


def test_allowed_hosts_work_and_errors_never_quote_the_body(
    allowing_service: ServiceProcess, listener: Listener
) -> None:
    with allowing_service.client() as http:
        data(http.post("/apps", json=_http_app("good", listener.url())), 201)
        rows = data(_evaluate(http, "good"))
        assert rows[0][0]["prediction"] == "AWEL has three layers."
        for name, path in (("err", "/error"), ("page", "/html"), ("int", "/bigint")):
            data(http.post("/apps", json=_http_app(name, listener.url(path))), 201)
            result = data(_evaluate(http, name))[0][0]
            assert result["score"] is None and BODY_SECRET not in result["error"]
            assert "bytes" in result["error"], result["error"]  # says what came back
            assert "digits" not in result["error"]  # a reply Python cannot read: not its error


def test_a_name_that_rebinds_to_loopback_is_refused_at_connection(listener: Listener) -> None:
    """The creation check saw a public address; when the app connects, the same name resolves
    to loopback (DNS rebinding). The connection goes only to an address checked at that moment."""
    before = len(listener.seen)
    answers = iter([["93.184.216.34"], ["127.0.0.1"], ["127.0.0.1"], ["127.0.0.1"]])
    policy = HostPolicy(resolver=lambda _host: next(answers))
    url = f"http://rebind.example:{listener.port}/ask"
    assert policy.refuses_url(url) is None  # looked public when the app was made
    app = HttpApp("rebind", url, hosts=policy, max_retries=0)

    async def ask() -> None:
        try:
            await app.answer("what is AWEL?")
        finally:
            await app.aclose()

    with pytest.raises(AppRefused, match="may not be reached"):
        asyncio.run(ask())
    assert isinstance(app.failure, AppRefused) and len(listener.seen) == before


def test_the_connection_goes_to_the_address_that_was_checked(listener: Listener) -> None:
    """Allowed by name or network, the app connects to the resolved, checked address."""
    calls: list[str] = []

    def resolver(host: str) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"]

    policy = HostPolicy(["127.0.0.1/32"], resolver=resolver)
    app = HttpApp("pinned", f"http://internal.example:{listener.port}/ask", hosts=policy)

    async def ask() -> str:
        try:
            return (await app.answer("q")).answer
        finally:
            await app.aclose()

    assert asyncio.run(ask()) == "AWEL has three layers."
    assert calls == ["internal.example"]
    assert listener.seen[-1].headers["Host"] == f"internal.example:{listener.port}"
