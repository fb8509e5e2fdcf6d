"""Hostile URL forms and IPv4-embedding IPv6 addresses against a real ``ragmeter serve``.

No URL form answers 500: an invalid punycode label, an overlong or empty label, a port out
of range, credentials, unicode dots and the like are a 4xx naming the field. And an IPv6
address that carries an IPv4 address (mapped, compatible, translated, NAT64, 6to4, Teredo,
ISATAP) is classified by that IPv4 address, as is the deprecated site-local fec0::/10."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import run, write_models
from tests.integration.service import ServiceProcess, data

HOSTILE = [
    "http://xn--127-0.0.0.1/x",  # an invalid punycode label
    "http://xn--/x",  # a punycode label with nothing in it
    "http://xn--zz-0000000000000000.example/x",
    "http://" + "a" * 64 + ".example/x",  # a label over 63 characters
    "http://" + "a." * 130 + "example/x",  # a name over 253 characters
    "http://a..example/x",  # an empty label
    "http://.example/x",
    "http://-a.example/x",
    "http://example.com:99999/x",  # ports out of range
    "http://example.com:0/x",
    "http://example.com:-1/x",
    "http://example.com:port/x",
    "http://user:secret@example.com/x",  # credentials in the URL
    "http://user@127.0.0.1/x",
    "http://%00/x",  # percent-escapes and spaces in the host
    "http://a b.example/x",
    "http://ｅｘａｍｐｌｅ.com/x",  # fullwidth letters
    "http://127\u30020\u30020\u30021/x",  # ideographic full stops: 127.0.0.1
    "http://127\uff0e0\uff0e0\uff0e1/x",  # fullwidth full stops
    "http://exa\u202emple.com/x",  # a right-to-left override
    "http://exa\u200bmple.com/x",  # a zero-width space
    "http://[::1/x",  # broken IPv6 literals
    "http://[zz::1]/x",
    "http://[fe80::1%25eth0]/x",
    "http:///x",
    "http://",
    "https://[::127.0.0.1]:1/x",
]

#: IPv6 forms carrying a loopback, private or reserved IPv4 address, and fec0::/10
EMBEDDING = [
    "::127.0.0.1",  # IPv4-compatible
    "::10.0.0.1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:0:127.0.0.1",  # IPv4-translated (SIIT)
    "64:ff9b::7f00:1",  # NAT64, well-known prefix
    "64:ff9b::a9fe:a9fe",  # NAT64 to 169.254.169.254 (cloud metadata)
    "64:ff9b:1::c0a8:1",  # NAT64, local-use prefix
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    "2a00:1450:4001::5efe:7f00:1",  # ISATAP of 127.0.0.1
    "2a00:1450:4001::200:5efe:a00:1",  # ISATAP (u bit) of 10.0.0.1
    "fec0::1",  # site-local
    "fefe::1",
]


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, judge: ScriptedJudgeServer
) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("url-forms")
    write_models(home, judge.url)
    with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
        config.write('\n[server]\napp_secrets = {RAG_KEY = ["rag.example"]}\n')
    with ServiceProcess(home) as server:
        yield server


def _refused(response: httpx.Response, field: str) -> str:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    body = response.json()
    assert body["success"] is False and field in body["err_msg"], body
    return str(body["err_msg"])


def test_no_url_form_answers_500(service: ServiceProcess) -> None:
    with service.client() as http:
        for index, url in enumerate(HOSTILE):
            http_app = {"name": f"h{index}", "config": {"kind": "http", "url": url}}
            _refused(http.post("/apps", json=http_app), "config.url")
            # the secret's binding reads the same URL
            bound = {"kind": "http", "url": url, "api_key_env": "RAG_KEY"}
            _refused(http.post("/apps", json={"name": f"s{index}", "config": bound}), "config.")
            rag = {"kind": "rag", "base_url": url, "model": "scripted"}
            _refused(http.post("/apps", json={"name": f"r{index}", "config": rag}), "config.")
        assert data(http.get("/apps")) == []
        assert httpx.get(f"{service.url}/health").status_code == 200


def test_a_stored_app_with_a_hostile_url_fails_its_rows_not_the_server(
    service: ServiceProcess,
) -> None:
    added = run("app", "add", "puny", "--url", HOSTILE[0], home=service.home)
    assert added.returncode == 0, added.stderr  # the command line may name any URL
    body = {
        "scene_key": "app",
        "scene_value": "puny",
        "context": {"model": "scripted"},
        "evaluate_metrics": ["AnswerRelevancyMetric"],
        "datasets": [{"query": "what is AWEL?"}],
    }
    with service.client() as http:
        answer = http.post("/evaluate/evaluation", json=body)
    assert answer.status_code < 500, answer.text


def test_ipv6_forms_embedding_ipv4_are_classified_by_their_ipv4(
    service: ServiceProcess,
) -> None:
    with service.client() as http:
        for index, address in enumerate(EMBEDDING):
            app: dict[str, Any] = {
                "name": f"v6-{index}",
                "config": {"kind": "http", "url": f"http://[{address}]:8080/ask"},
            }
            message = _refused(http.post("/apps", json=app), "config.url")
            assert "allow_app_hosts" in message, (address, message)
        # a public IPv4 address embedded the same ways is public
        for index, address in enumerate(("64:ff9b::808:808", "2002:808:808::1")):
            app = {
                "name": f"pub-{index}",
                "config": {"kind": "http", "url": f"http://[{address}]/a"},
            }
            data(http.post("/apps", json=app), 201)


def test_an_allowed_ipv4_network_covers_its_embedded_forms() -> None:
    from ragmeter.apps import HostPolicy

    allowing = HostPolicy(["127.0.0.0/8"])
    for address in ("::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "::127.0.0.1"):
        assert allowing.allows(address, address), address
    assert not allowing.allows("::10.0.0.1", "::10.0.0.1")
    default = HostPolicy()
    for address in EMBEDDING:
        assert not default.allows(address, address), address
