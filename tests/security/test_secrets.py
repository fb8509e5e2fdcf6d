"""Finding 1: no secret leaves the server. A key holder creates apps that would send the server's
environment variables, or the judge model's key, to a listener they control; every such request
is refused, and the listener never receives a secret. Only variables the operator lists in
``[server] app_secrets`` are ever sent, and only where an app may connect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import run
from tests.integration.service import ServiceProcess, data, failure
from tests.security.listener import Listener

SERVER_SECRET = "server-secret-5d41402abc"
JUDGE_SECRET = "judge-secret-7d793037a0"
RAG_KEY = "rag-key-allowed-0001"


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    with Listener() as found:
        yield found


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, listener: Listener
) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("secrets-home")
    with ScriptedJudgeServer() as judge:
        (home / "ragmeter.toml").write_text(
            f'[models.scripted]\nbase_url = "{judge.url}"\nmodel = "scripted"\n'
            'api_key_env = "JUDGE_KEY"\n\n'
            f'[models.hashed]\nbase_url = "{judge.url}"\nmodel = "hashed-words"\n\n'
            '[server]\napp_secrets = ["RAG_KEY"]\nallow_app_hosts = ["127.0.0.1"]\n',
            encoding="utf-8",
        )
        with pytest.MonkeyPatch.context() as env:
            env.setenv("SERVER_SECRET", SERVER_SECRET)
            env.setenv("JUDGE_KEY", JUDGE_SECRET)
            env.setenv("RAG_KEY", RAG_KEY)
            server = ServiceProcess(home).start()
        try:
            with server.client() as http:
                space = {"name": "docs", "embedder": "hashed"}
                data(http.post("/knowledge/spaces", json=space), 201)
            yield server
        finally:
            server.stop()


def _app(name: str, **config: Any) -> dict[str, Any]:
    return {"name": name, "config": config}


def _evaluate_app(http: Any, app: str) -> Any:
    body = {
        "scene_key": "app",
        "scene_value": app,
        "context": {"model": "scripted"},
        "evaluate_metrics": ["AnswerRelevancyMetric"],
        "datasets": [{"query": "what is AWEL?"}],
    }
    return http.post("/evaluate/evaluation", json=body)


def test_apps_may_not_name_a_secret_the_operator_did_not_allow(
    service: ServiceProcess, listener: Listener
) -> None:
    attacks = [
        _app("a1", kind="http", url=listener.url(), api_key_env="SERVER_SECRET"),
        _app("a2", kind="http", url=listener.url(), api_key_env="JUDGE_KEY"),
        _app("a3", kind="rag", space="docs", model="scripted", api_key_env="SERVER_SECRET"),
    ]
    with service.client() as http:
        for attack in attacks:
            message = failure(http.post("/apps", json=attack), 400)
            assert "config.api_key_env" in message and "app_secrets" in message, message
    assert listener.everything() == ""


def test_rag_apps_name_declared_models_only(service: ServiceProcess, listener: Listener) -> None:
    with service.client() as http:
        redirected = _app(
            "r1", kind="rag", space="docs", model="scripted", base_url=listener.url("/v1")
        )
        message = failure(http.post("/apps", json=redirected), 400)
        assert "config.base_url" in message and "[models.NAME]" in message
        undeclared = _app("r2", kind="rag", space="docs", model="gpt-4o")
        message = failure(http.post("/apps", json=undeclared), 400)
        assert "config.model" in message and "scripted" in message
    assert listener.everything() == ""


def test_an_allowed_secret_goes_to_its_app_and_nothing_else_leaks(
    service: ServiceProcess, listener: Listener
) -> None:
    with service.client() as http:
        allowed = _app("ok", kind="http", url=listener.url(), api_key_env="RAG_KEY")
        data(http.post("/apps", json=allowed), 201)
        rows = data(_evaluate_app(http, "ok"))
    assert rows[0][0]["prediction"] == "AWEL has three layers."
    sent = [s.headers.get("Authorization") for s in listener.seen]
    assert sent and set(sent) == {f"Bearer {RAG_KEY}"}
    assert SERVER_SECRET not in listener.everything()
    assert JUDGE_SECRET not in listener.everything()


def test_an_operator_app_with_a_secret_not_on_the_list_does_not_run(
    service: ServiceProcess, listener: Listener
) -> None:
    before = len(listener.seen)
    added = run(
        "app", "add", "legacy", "--url", listener.url(), "--api-key-env", "SERVER_SECRET",
        home=service.home,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    with service.client() as http:
        message = failure(_evaluate_app(http, "legacy"), 400)
    assert "app_secrets" in message
    assert len(listener.seen) == before and SERVER_SECRET not in listener.everything()


def test_context_model_is_a_name_not_a_url(service: ServiceProcess, listener: Listener) -> None:
    before = len(listener.seen)
    body = {
        "scene_key": "dataset",
        "context": {"model": listener.url("/v1")},
        "evaluate_metrics": ["faithfulness"],
        "datasets": [{"query": "q", "response": "r", "retrieved_contexts": ["c"]}],
    }
    with service.client() as http:
        message = failure(http.post("/evaluate/evaluation", json=body), 400)
        assert "context.model" in message and "unknown model" in message
        assert str(Path(service.home)) not in message  # no server path in an answer
        embedding = {**body, "context": {"embedding_model": "http://127.0.0.1:1/v1"}}
        embedding["evaluate_metrics"] = ["RetrieverSimilarityMetric"]
        embedding["datasets"] = [{"query": "q", "retrieved_contexts": ["c"], "factual": ["c"]}]
        message = failure(http.post("/evaluate/evaluation", json=embedding), 400)
        assert "context.embedding_model" in message
    assert len(listener.seen) == before


def test_app_urls_are_shown_without_their_credentials(service: ServiceProcess) -> None:
    url = "http://ops:hunter2@93.184.216.34/ask?token=tok-123"
    added = run("app", "add", "withcreds", "--url", url, home=service.home)
    assert added.returncode == 0, added.stderr
    with service.client() as http:
        shown = data(http.get("/apps/withcreds"))
        listed = http.get("/apps").text
    assert shown["config"]["url"] == "http://93.184.216.34/ask?..."
    assert "hunter2" not in listed and "tok-123" not in listed


def test_re_adding_an_app_over_the_api_names_replace(service: ServiceProcess) -> None:
    app = _app("twice", kind="http", url="http://93.184.216.34/ask")
    with service.client() as http:
        data(http.post("/apps", json=app), 201)
        message = failure(http.post("/apps", json=app), 409)
        assert '"replace": true' in message
        moved = {**app, "config": {**app["config"], "url": "http://93.184.216.35/ask"}}
        replaced = data(http.post("/apps", json={**moved, "replace": True}), 201)
    assert replaced["config"]["url"] == "http://93.184.216.35/ask"


def test_a_secret_bound_to_hosts_goes_nowhere_else(
    tmp_path_factory: pytest.TempPathFactory, listener: Listener
) -> None:
    """The operator binds TEAM_KEY to their own RAG service's host: a key holder cannot have it
    sent to a public host of theirs, by an HttpApp or by a RagApp's model."""
    home = tmp_path_factory.mktemp("bound-home")
    with ScriptedJudgeServer() as judge:
        (home / "ragmeter.toml").write_text(
            f'[models.scripted]\nbase_url = "{judge.url}"\nmodel = "scripted"\n\n'
            f'[models.hashed]\nbase_url = "{judge.url}"\nmodel = "hashed-words"\n\n'
            '[models.elsewhere]\nbase_url = "https://93.184.216.34/v1"\nmodel = "x"\n\n'
            '[server]\napp_secrets = { TEAM_KEY = ["127.0.0.1"] }\n',
            encoding="utf-8",
        )
        with pytest.MonkeyPatch.context() as env:
            env.setenv("TEAM_KEY", "team-key-bound-42")
            server = ServiceProcess(home).start()
        try:
            with server.client() as http:
                data(http.post("/knowledge/spaces", json={"name": "kb", "embedder": "hashed"}), 201)
                away = _app(
                    "away", kind="http", url="http://93.184.216.34/collect", api_key_env="TEAM_KEY"
                )
                message = failure(http.post("/apps", json=away), 400)
                assert (
                    "$TEAM_KEY may not be sent there" in message
                    and "app_secrets.TEAM_KEY" in message
                )
                model = _app("m", kind="rag", space="kb", model="elsewhere", api_key_env="TEAM_KEY")
                assert "may not be sent there" in failure(http.post("/apps", json=model), 400)
                home_app = _app("home", kind="http", url=listener.url(), api_key_env="TEAM_KEY")
                data(http.post("/apps", json=home_app), 201)  # its bound host: reachable
                data(_evaluate_app(http, "home"))
            added = run(
                "app", "add", "cli-away", "--url", "http://93.184.216.34/collect",
                "--api-key-env", "TEAM_KEY", home=home,
            )  # fmt: skip
            assert added.returncode == 0, added.stderr
            with server.client() as http:
                assert "may not be sent there" in failure(_evaluate_app(http, "cli-away"), 400)
        finally:
            server.stop()
    assert "Bearer team-key-bound-42" in {s.headers.get("Authorization") for s in listener.seen}
