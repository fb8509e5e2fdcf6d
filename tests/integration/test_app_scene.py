"""The app scene: ``ragmeter eval --app`` against a RagApp (space + prompt + the scripted
model) and an HttpApp (a real HTTP server started here), judged by the scripted judge."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import json_lines, run, write_corpus, write_models
from tests.readme_blocks import WALKTHROUGH, heredoc

QA = [
    {"query": "Which layers make up AWEL?", "doc_name": "guide/awel.md"},
    {"query": "Where do AWEL workflows run?", "doc_name": "guide/awel.md"},
    {"query": "What does a compost heap need?", "doc_name": "readme.txt"},
]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as judge:
        yield judge


@pytest.fixture(scope="module")
def app_home(tmp_path_factory: pytest.TempPathFactory, server: ScriptedJudgeServer) -> Path:
    root = tmp_path_factory.mktemp("apps")
    home = root / "home"
    write_models(home, server.url)
    assert run("space", "create", "kb", "--embedder", "hashed", home=home).returncode == 0
    assert run("space", "add", "kb", str(write_corpus(root / "corpus")), home=home).returncode == 0
    (root / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in QA), encoding="utf-8")
    return home


def _eval(home: Path, app: str, *extra: str) -> tuple[Any, list[dict[str, Any]]]:
    out = home.parent / f"{app}.jsonl"
    result = run(
        "eval",
        str(home.parent / "qa.jsonl"),
        "--app",
        app,
        "--metrics",
        "AnswerRelevancyMetric,faithfulness",
        "--judge-model",
        "scripted",
        "--no-cache",
        "--out",
        str(out),
        *extra,
        home=home,
    )
    assert result.returncode == 0, result.stderr
    return result, json_lines(out.read_text(encoding="utf-8"))


def test_rag_app_answers_from_its_space_then_is_judged(
    app_home: Path, server: ScriptedJudgeServer
) -> None:
    added = run(
        "app", "add", "bot", "--space", "kb", "--model", "scripted", "--top-k", "2", home=app_home
    )
    assert added.returncode == 0, added.stderr
    server.reset()
    result, lines = _eval(app_home, "bot")
    # one answer per row, then 1 + 2 judge requests per row (AnswerRelevancyMetric, fused faithfulness)
    assert server.snapshot()["chat_requests"] == len(QA) * 4
    assert "app model: 3 requests" in result.stdout
    assert len(lines) == len(QA) * 2 and {x["app"] for x in lines} == {"bot"}
    for line in lines:
        assert line["score"] is not None, line["error"]
        assert len(line["contexts"]) == 2
        assert line["prediction"] and line["prediction"] != "I do not know."
    relevancy = [x for x in lines if x["metric_name"] == "AnswerRelevancyMetric"]
    assert all(0 <= x["score"] <= 5 and x["passing"] is not None for x in relevancy)
    # the answer is built from the retrieved chunks, so it is faithful to them
    faithful = [x["score"] for x in lines if x["metric_name"] == "faithfulness"]
    assert min(faithful) > 0.5


def test_prompts_steer_the_app_and_the_judge(
    app_home: Path, tmp_path: Path, server: ScriptedJudgeServer
) -> None:
    """The walkthrough's own prompt files (docs/how-to/evaluate-rag-app.md), answered and scored by the scripted model: an app
    scene with custom prompts runs offline, never a silent 0."""
    judge_file = tmp_path / "judge.txt"
    judge_file.write_text(heredoc("judge.txt", path=WALKTHROUGH), encoding="utf-8")
    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(heredoc("answer.txt", path=WALKTHROUGH), encoding="utf-8")
    assert run("prompt", "add", "strict", "--file", str(judge_file), home=app_home).returncode == 0
    assert (
        run(
            "prompt", "add", "terse", "--file", str(answer_file), "--kind", "answer", home=app_home
        ).returncode
        == 0
    )
    assert (
        run("prompt", "show", "strict", home=app_home).stdout
        == heredoc("judge.txt", path=WALKTHROUGH) + "\n"
    )
    listing = run("prompt", "list", home=app_home).stdout
    assert "strict" in listing and "terse" in listing and "answer" in listing
    assert (
        run(
            "app",
            "add",
            "terse-bot",
            "--space",
            "kb",
            "--model",
            "scripted",
            "--prompt",
            "terse",
            home=app_home,
        ).returncode
        == 0
    )
    server.reset()
    _, lines = _eval(app_home, "terse-bot", "--judge-prompt", "strict")
    sent = list(server.prompts)
    assert sum(
        p.startswith(heredoc("answer.txt", path=WALKTHROUGH).split(".")[0]) for p in sent
    ) == len(QA)
    assert sum(p.startswith("Score the answer from 0") for p in sent) == len(QA)
    by_row = {x["row_index"]: x for x in lines if x["metric_name"] == "AnswerRelevancyMetric"}
    # the answers are sentences of the retrieved passages sharing words with the question
    for index, row in by_row.items():
        assert row["prediction"] not in ("", "I do not know."), row
        assert "scripted reply" not in row["prediction"]
        assert all(w in " ".join(row["contexts"]) for w in row["prediction"].split()[:3])
        assert row["score"] is not None and 0 <= row["score"] <= 5, row
        assert "answer sentences are backed by the context" in row["feedback"], index
    assert max(row["score"] for row in by_row.values()) >= 3  # extractive answers are backed
    # a judge prompt where an answer prompt is needed, and the other way round
    wrong = run(
        "app",
        "add",
        "x",
        "--space",
        "kb",
        "--model",
        "scripted",
        "--prompt",
        "strict",
        home=app_home,
    )
    assert wrong.returncode == 2
    assert (
        "prompt 'strict' is a judge prompt; this needs one added with --kind answer" in wrong.stderr
    )
    assert run("prompt", "rm", "strict", home=app_home).returncode == 0
    gone = run("prompt", "show", "strict", home=app_home)
    assert gone.returncode == 2 and "no prompt 'strict'" in gone.stderr


def test_prompt_variables_are_checked(app_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("Score {answer} for {query}", encoding="utf-8")
    result = run("prompt", "add", "bad", "--file", str(path), home=app_home)
    assert result.returncode == 2
    assert "must use {query}, {context}, {answer}; it lacks {context}" in result.stderr
    path.write_text("{query} {context} {answer} {score}", encoding="utf-8")
    odd = run("prompt", "add", "bad", "--file", str(path), home=app_home)
    assert odd.returncode == 2 and "it uses {score}" in odd.stderr


class _Answers(BaseHTTPRequestHandler):
    """The user's own RAG endpoint: nested JSON; 'compost' questions fail with a 500."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"body": body, "auth": self.headers.get("Authorization")})
        if "compost" in body["q"]:
            status, reply = 500, {"error": "index offline"}
        else:
            context = "AWEL workflows run in a stand-alone environment or on a Ray cluster."
            reply = {"data": {"text": context, "sources": [{"content": context}]}}
            status = 200
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Answers.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/answer"
    httpd.shutdown()
    httpd.server_close()


def test_http_app_failures_are_row_data(
    app_home: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = run(
        "app",
        "add",
        "web",
        "--url",
        endpoint,
        "--query-key",
        "q",
        "--answer-key",
        "data.text",
        "--contexts-key",
        "data.sources",
        "--api-key-env",
        "WEB_KEY",
        home=app_home,
    )
    assert added.returncode == 0, added.stderr
    unset = run(
        "eval",
        str(app_home.parent / "qa.jsonl"),
        "--app",
        "web",
        "-m",
        "faithfulness",
        "--judge-model",
        "scripted",
        home=app_home,
    )
    assert unset.returncode == 2 and "$WEB_KEY, which is not set" in unset.stderr
    monkeypatch.setenv("WEB_KEY", "s3cret")
    result, lines = _eval(app_home, "web")
    assert {s["auth"] for s in _Answers.seen} == {"Bearer s3cret"}
    assert {s["body"]["q"] for s in _Answers.seen} == {r["query"] for r in QA}
    failed = [x for x in lines if x["row_index"] == 2]
    assert {x["score"] for x in failed} == {None}
    assert all(
        "app 'web' failed" in x["error"] and "answered HTTP 500" in x["error"] for x in failed
    )
    scored = [x for x in lines if x["row_index"] != 2]
    assert all(x["score"] is not None for x in scored)
    assert scored[0]["contexts"] == [
        "AWEL workflows run in a stand-alone environment or on a Ray cluster."
    ]
    assert "2 result(s) have no score" in result.stdout


def test_an_unreachable_http_app_stops_the_run_naming_its_url(
    app_home: Path, server: ScriptedJudgeServer
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/ask"
    assert run("app", "add", "dead", "--url", dead, home=app_home).returncode == 0
    before = server.snapshot().get("chat_requests", 0)
    result = run(
        "eval", str(app_home.parent / "qa.jsonl"), "--app", "dead", "-m", "faithfulness",
        "--judge-model", "scripted", home=app_home,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert f"app 'dead' at {dead} is unreachable" in result.stderr
    assert server.snapshot().get("chat_requests", 0) == before  # nothing was judged


def test_a_rag_app_whose_model_is_unreachable_stops_the_run(
    app_home: Path, server: ScriptedJudgeServer
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    added = run(
        "app", "add", "deadbot", "--space", "kb", "--model", "gone", "--model-base-url", dead,
        home=app_home,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    before = server.snapshot().get("chat_requests", 0)
    result = run(
        "eval", str(app_home.parent / "qa.jsonl"), "--app", "deadbot", "-m", "faithfulness",
        "--judge-model", "scripted", home=app_home,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert "app 'deadbot'" in result.stderr and f"at {dead} is unreachable" in result.stderr
    assert server.snapshot().get("chat_requests", 0) == before  # nothing was judged


def test_app_add_refuses_what_cannot_run(app_home: Path) -> None:
    both = run("app", "add", "x", "--space", "kb", "--url", "http://127.0.0.1:1/", home=app_home)
    assert both.returncode == 2 and "exactly one of" in both.stderr
    space = run("app", "add", "x", "--space", "nope", "--model", "scripted", home=app_home)
    assert space.returncode == 2 and "no knowledge space 'nope'" in space.stderr
    model = run("app", "add", "x", "--space", "kb", "--model", "gpt-9", home=app_home)
    assert model.returncode == 2 and "unknown model 'gpt-9'" in model.stderr
    url = run("app", "add", "x", "--url", "ftp://host/x", home=app_home)
    assert url.returncode == 2 and "url" in url.stderr
    missing = run(
        "eval",
        str(app_home.parent / "qa.jsonl"),
        "--app",
        "ghost",
        "-m",
        "faithfulness",
        "--judge-model",
        "scripted",
        home=app_home,
    )
    assert missing.returncode == 2 and "no app 'ghost'" in missing.stderr


def test_a_python_function_as_the_app(
    app_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_rag.py").write_text(
        "async def answer(query):\n"
        "    context = 'AWEL is divided into an operator layer, an AgentFream layer and a DSL layer.'\n"
        "    return {'answer': context, 'contexts': [context]}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    added = run("app", "add", "fn", "--callable", "my_rag:answer", home=app_home)
    assert added.returncode == 0, added.stderr
    _, lines = _eval(app_home, "fn")
    faithful = [x["score"] for x in lines if x["metric_name"] == "faithfulness"]
    assert faithful == [1.0] * len(QA)
    assert run("app", "rm", "fn", home=app_home).returncode == 0
    assert "fn" not in run("app", "list", home=app_home).stdout


_RESUMED_PLAN = """
import json, sys
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.planning.config import EvaluationConfig
from ragmeter.runs.planning.plan import build_plan
from ragmeter.runs.storage.store import RunStore

kb = KnowledgeBase()
runs = RunStore(kb.store)
record = runs.find(sys.argv[1])
rows = list(runs.iter_dataset_rows(record.dataset_id))
plan = build_plan(EvaluationConfig.from_stored(record.spec), rows, kb)  # as a resume builds it
judged = [m.prompt_template for m in plan.metrics if m.metric_name == "AnswerRelevancyMetric"]
app = plan.target.app
print(json.dumps({"judge": judged[0], "top_k": app.top_k, "answer": app.prompt_template}))
"""


def test_edited_prompts_and_apps_are_new_versions_and_runs_keep_theirs(
    app_home: Path, tmp_path: Path
) -> None:
    """A run keeps the versions of the judge prompt, the app and the app's answer prompt it
    was made with: editing any of them afterwards makes a new version, and the run's
    lineage, 'show NAME@V' and the plan a resume builds still name and use the old one."""
    import subprocess
    import sys

    judge_file, answer_file = tmp_path / "judge.txt", tmp_path / "answer.txt"
    judge_file.write_text(heredoc("judge.txt", path=WALKTHROUGH), encoding="utf-8")
    answer_file.write_text(heredoc("answer.txt", path=WALKTHROUGH), encoding="utf-8")
    assert run("prompt", "add", "grader", "--file", str(judge_file), home=app_home).returncode == 0
    added = run("prompt", "add", "short", "--file", str(answer_file), "--kind", "answer",
                home=app_home)  # fmt: skip
    assert added.returncode == 0, added.stderr
    made = run("app", "add", "vbot", "--space", "kb", "--model", "scripted", "--prompt", "short",
               "--top-k", "2", home=app_home)  # fmt: skip
    assert made.returncode == 0, made.stderr
    _eval(app_home, "vbot", "--judge-prompt", "grader", "--name", "pinned")
    # every one edited after the run: version 2 each
    judge_file.write_text(
        "Version two. " + heredoc("judge.txt", path=WALKTHROUGH), encoding="utf-8"
    )
    answer_file.write_text(
        "Version two. " + heredoc("answer.txt", path=WALKTHROUGH), encoding="utf-8"
    )
    for code, kind in (("grader", "judge"), ("short", "answer")):
        again = run("prompt", "add", code, "--file", str(tmp_path / f"{kind}.txt"), "--kind",
                    kind, "--replace", home=app_home)  # fmt: skip
        assert again.returncode == 0 and "version 2" in again.stdout, again.stdout + again.stderr
    edited = run("app", "add", "vbot", "--space", "kb", "--model", "scripted", "--prompt",
                 "short", "--top-k", "3", "--replace", home=app_home)  # fmt: skip
    assert edited.returncode == 0, edited.stderr
    assert (
        run("prompt", "show", "grader@1", home=app_home).stdout
        == heredoc("judge.txt", path=WALKTHROUGH) + "\n"
    )
    assert run("prompt", "show", "grader", home=app_home).stdout.startswith("Version two.")
    old_app = json.loads(run("app", "show", "vbot@1", home=app_home).stdout)
    new_app = json.loads(run("app", "show", "vbot", home=app_home).stdout)
    assert (old_app["version"], old_app["top_k"], old_app["prompt"]) == (1, 2, "short@1")
    assert (new_app["version"], new_app["top_k"], new_app["prompt"]) == (2, 3, "short@2")
    missing = run("app", "show", "vbot@9", home=app_home)
    assert missing.returncode == 2 and "versions 1 to 2" in missing.stderr
    # the run still says, and a resume still uses, what it was made with
    shown = json.loads(run("runs", "show", "pinned", "--json", home=app_home).stdout)
    lineage = shown["lineage"]
    assert lineage["judge"]["prompt"]["code"] == "grader"
    assert lineage["judge"]["prompt"]["version"] == 1
    assert (lineage["target"]["app"]["name"], lineage["target"]["app"]["version"]) == ("vbot", 1)
    env = {**__import__("os").environ, "RAGMETER_HOME": str(app_home), "HF_HUB_OFFLINE": "1"}
    planned = subprocess.run([sys.executable, "-c", _RESUMED_PLAN, "pinned"], env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["judge"] == heredoc("judge.txt", path=WALKTHROUGH) and plan["top_k"] == 2
    assert plan["answer"] == heredoc("answer.txt", path=WALKTHROUGH)
    # a new run takes the newest versions
    _eval(app_home, "vbot", "--judge-prompt", "grader", "--name", "newest")
    newest = json.loads(run("runs", "show", "newest", "--json", home=app_home).stdout)["lineage"]
    assert newest["judge"]["prompt"]["version"] == 2 and newest["target"]["app"]["version"] == 2
