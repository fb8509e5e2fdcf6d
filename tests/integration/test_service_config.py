"""A running server re-reads ragmeter.toml when it changes: a model added after start can be
used at once, and an unknown model is named to an HTTP caller without CLI flags or server paths.
A file that no longer parses keeps the settings in force and says so in the server's log."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import write_models
from tests.integration.service import ServiceProcess, data, failure


def _body(model: str) -> dict[str, object]:
    return {
        "scene_key": "dataset",
        "context": {"model": model},
        "evaluate_metrics": ["AnswerRelevancyMetric"],
        "datasets": [{"query": "what is AWEL?", "response": "AWEL is a workflow language."}],
    }


def _models(http: httpx.Client) -> set[str]:
    return {m["name"] for m in data(http.get("/models"))}


def test_models_added_after_start_are_used_without_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        config = home / "ragmeter.toml"
        with ServiceProcess(home) as server, server.client() as http:
            message = failure(http.post("/evaluate/evaluation", json=_body("later")), 400)
            assert "unknown model 'later'" in message and "scripted" in message
            assert "--judge" not in message and str(home) not in message
            with config.open("a", encoding="utf-8") as handle:
                handle.write(f'\n[models.later]\nbase_url = "{judge.url}"\nmodel = "scripted"\n')
            assert "later" in _models(http)
            rows = data(http.post("/evaluate/evaluation", json=_body("later")))
            assert rows[0][0]["score"] is not None
            time.sleep(0.01)  # a new modification time
            config.write_text("[models.broken\n", encoding="utf-8")
            assert "later" in _models(http)  # the settings in force are kept
            log = server.log.read_text(encoding="utf-8")
    assert "cannot be read; settings kept" in log


def test_a_space_whose_embedder_left_the_config_says_so_without_server_paths(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with ServiceProcess(home) as server, server.client() as http:
            data(http.post("/knowledge/spaces", json={"name": "kb", "embedder": "hashed"}), 201)
            (home / "ragmeter.toml").write_text("", encoding="utf-8")  # the model is gone
            body = {"query": "AWEL", "retriever": "vector"}
            message = failure(http.post("/knowledge/spaces/kb/retrieve", json=body), 400)
    assert "unknown model 'hashed'" in message
    assert str(home) not in message and "$RAGMETER_HOME" in message
