"""Agents as targets of the app scene, offline: ``ToolAgent`` runs the scripted judge server
as a tool-calling model with the row's ``available_tools``, its calls run through a Python
function or a real HTTP endpoint on 127.0.0.1, up to a step limit; the conversation and each
step's latency and tokens are kept with the row and scored by the agent metrics. A function
app may return its messages or only its tool calls."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.apps import CallableApp, ToolAgent
from ragmeter.judge import JudgeSettings
from ragmeter.judge.from_config import judge_from_config
from ragmeter.testing import ScriptedJudgeServer

TOOLS = [
    {"type": "function", "function": {
        "name": "weather", "description": "Weather forecast for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }},
    {"type": "function", "function": {
        "name": "book_hotel", "description": "Book a hotel room for some nights",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "nights": {"type": "integer"}}},
    }},
]  # fmt: skip
ROWS = [
    {
        "query": "What is the weather forecast in Paris?",
        "available_tools": TOOLS,
        "reference_tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}],
    },
    {
        "query": "Book a hotel in Rome for 3 nights",
        "available_tools": TOOLS,
        "reference_tool_calls": [
            {"name": "book_hotel", "arguments": {"city": "Rome", "nights": 3}}
        ],
    },
]
METRICS = "tool_call_f1,trajectory_match,task_completion"


def run_tool(name: str, arguments: Any) -> Any:
    if name == "weather":
        return f"{arguments['city']}: sunny, 18C"
    return {"booked": True, "city": arguments["city"], "nights": arguments["nights"]}


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


def _agent(model: ScriptedJudgeServer, tools: Any, **options: Any) -> ToolAgent:
    return ToolAgent(
        "planner", JudgeSettings(model="scripted", base_url=model.url), tools, **options
    )


def _evaluate(model: ScriptedJudgeServer, app: Any, metrics: str = METRICS) -> Any:
    judge = judge_from_config("scripted", base_url=model.url, cache=False)
    return ragmeter.evaluate(ROWS, metrics, app=app, judge=judge, store=True)


def test_the_agent_calls_the_rows_tools_and_is_scored(model: ScriptedJudgeServer) -> None:
    report = _evaluate(model, _agent(model, run_tool))
    assert report.scores("tool_call_f1") == [1.0, 1.0]
    assert report.scores("trajectory_match") == [1.0, 1.0]
    assert all(s is not None and s > 0 for s in report.scores("task_completion"))
    raw = report.results("tool_call_f1")[1].raw_dataset
    roles = [m["role"] for m in raw["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = raw["messages"][1]["tool_calls"][0]
    assert (call["name"], call["arguments"]) == ("book_hotel", {"city": "Rome", "nights": 3})
    assert json.loads(raw["messages"][2]["content"]) == {
        "booked": True,
        "city": "Rome",
        "nights": 3,
    }
    steps = raw["metadata"]["agent_steps"]
    assert len(steps) == 2  # a call, then the answer
    assert all(s["latency_s"] >= 0 and s["prompt_tokens"] > 0 for s in steps)


class _Tools:
    """Tools behind ``POST /tools`` on 127.0.0.1."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.calls.append(body)
                data = json.dumps({"result": run_tool(body["name"], body["arguments"])}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/tools"


def test_tools_behind_an_http_endpoint(model: ScriptedJudgeServer) -> None:
    tools = _Tools()
    try:
        report = _evaluate(model, _agent(model, tools.url), "tool_call_f1")
    finally:
        tools.httpd.shutdown()
        tools.httpd.server_close()
    assert report.scores("tool_call_f1") == [1.0, 1.0]
    assert sorted(c["name"] for c in tools.calls) == ["book_hotel", "weather"]


def test_the_step_limit_stops_the_agent(model: ScriptedJudgeServer) -> None:
    report = _evaluate(model, _agent(model, run_tool, max_steps=1), "tool_call_f1")
    assert report.scores("tool_call_f1") == [1.0, 1.0]  # the calls were made
    raw = report.results("tool_call_f1")[0].raw_dataset
    assert [m["role"] for m in raw["messages"]] == ["user", "assistant", "tool"]  # no answer
    assert len(raw["metadata"]["agent_steps"]) == 1


def test_a_function_app_may_return_its_tool_calls_or_messages(model: ScriptedJudgeServer) -> None:
    def calls_only(query: str) -> dict[str, Any]:
        city = "Paris" if "Paris" in query else "Rome"
        return {
            "answer": f"done for {city}",
            "tool_calls": [{"name": "weather", "arguments": {"city": city}}],
        }

    report = _evaluate(model, CallableApp(calls_only), "tool_call_f1")
    assert report.scores("tool_call_f1") == [1.0, 0.0]  # the second row expected a booking
    raw = report.results("tool_call_f1")[0].raw_dataset
    assert [m["role"] for m in raw["messages"]] == ["user", "assistant", "assistant"]

    def anthropic(query: str) -> dict[str, Any]:
        return {"messages": [
            {"role": "user", "content": query},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t", "name": "weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "sunny"}]},
            {"role": "assistant", "content": "Sunny in Paris."},
        ]}  # fmt: skip

    report = _evaluate(model, CallableApp(anthropic), "tool_call_f1")
    assert report.scores("tool_call_f1") == [1.0, 0.0]
    messages = report.results("tool_call_f1")[0].raw_dataset["messages"]
    assert messages[-1] == {"role": "assistant", "content": "Sunny in Paris."}


def test_bad_agent_settings_are_refused() -> None:
    settings = JudgeSettings(model="m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ragmeter.RagmeterError, match="max_steps"):
        ToolAgent("a", settings, run_tool, max_steps=0)
    with pytest.raises(ragmeter.RagmeterError, match="http"):
        ToolAgent("a", settings, "ftp://tools")


def test_an_http_app_may_answer_with_its_conversation(model: ScriptedJudgeServer) -> None:
    """An HttpApp whose reply holds ``messages`` (OpenAI's format) and no ``answer``."""
    from ragmeter.apps import HttpApp

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["query"]
            messages = [
                {"role": "user", "content": query},
                {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "1", "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}]},
                {"role": "tool", "tool_call_id": "1", "content": "sunny"},
                {"role": "assistant", "content": "Sunny."},
            ]  # fmt: skip
            data = json.dumps({"messages": messages}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        app = HttpApp("bot", f"http://127.0.0.1:{httpd.server_address[1]}/answer")
        report = _evaluate(model, app, "tool_call_f1,trajectory_match")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert report.scores("tool_call_f1") == [1.0, 0.0]
    assert report.scores("trajectory_match") == [1.0, 0.0]


def test_an_agent_app_registered_and_run_from_the_command_line(
    model: ScriptedJudgeServer, tmp_path: Path
) -> None:
    """``ragmeter app add bot --tools URL --model ...`` then ``ragmeter eval --app bot``."""
    from tests.integration.helpers import run

    tools = _Tools()
    rows = tmp_path / "agent.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    home = tmp_path / "home"
    try:
        added = run(
            "app", "add", "bot", "--tools", tools.url, "--model", "scripted",
            "--model-base-url", model.url, "--max-steps", "4", home=home,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        assert "added agent app 'bot'" in added.stdout
        out = tmp_path / "out.jsonl"
        done = run(
            "eval", str(rows), "--app", "bot", "-m", "tool_call_f1,trajectory_match",
            "--out", str(out), home=home,
        )  # fmt: skip
    finally:
        tools.httpd.shutdown()
        tools.httpd.server_close()
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted((x["metric_name"], x["score"]) for x in lines) == [
        ("tool_call_f1", 1.0), ("tool_call_f1", 1.0),
        ("trajectory_match", 1.0), ("trajectory_match", 1.0),
    ]  # fmt: skip
    assert len(tools.calls) == 2
    refused = run("app", "add", "bot2", "--tools", tools.url, home=home)
    assert refused.returncode == 2 and "needs --model" in refused.stderr
