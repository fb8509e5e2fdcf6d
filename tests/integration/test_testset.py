"""``ragmeter testset generate`` on the demo space, offline with the scripted judge: the
asked number of rows with chunk-id labels, the same file for the same seed, budget and resume,
bad input exiting 2, and the generated set scored end to end by the space's hybrid retriever."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.testing import ScriptedJudgeServer
from tests.integration.helpers import json_lines, run

FIELDS = {"query", "reference", "reference_contexts", "reference_ids", "doc_name", "type"}


@pytest.fixture(scope="module")
def judge() -> Iterator[ScriptedJudgeServer]:
    with ScriptedJudgeServer() as server:
        yield server


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding the demo space (built once by ``ragmeter demo``)."""
    home = tmp_path_factory.mktemp("testset-home")
    built = run("demo", home=home)
    assert built.returncode == 0, built.stderr
    return home


def _generate(home: Path, judge: ScriptedJudgeServer, out: Path, *args: str):  # type: ignore[no-untyped-def]
    return run(
        "testset",
        "generate",
        "--space",
        "ragmeter-demo",
        "--judge-model",
        "scripted",
        "--judge-base-url",
        judge.url,
        "--out",
        str(out),
        *args,
        home=home,
    )


def _chunks(home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The demo space's chunks by id."""
    from ragmeter.knowledge.spaces import KnowledgeBase

    monkeypatch.setenv("RAGMETER_HOME", str(home))
    chunks, _ = KnowledgeBase().space_chunks("ragmeter-demo", 0, 1000)
    return {str(c.id): c.content for c in chunks}


def test_generates_the_asked_rows_with_chunk_labels(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "qa.jsonl"
    result = _generate(demo_home, judge, out, "--size", "12", "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert "accepted" in result.stdout and "12 of 12" in result.stdout
    assert "rejected: grounded" in result.stdout
    rows = json_lines(out.read_text(encoding="utf-8"))
    assert len(rows) == 12
    chunks = _chunks(demo_home, monkeypatch)
    types = {row["type"] for row in rows}
    assert {"single", "multi"} <= types
    for row in rows:
        assert set(row) >= FIELDS
        assert row["language"] in ("en", "zh") and row["style"] == "plain"
        assert row["cost"]["requests"] + row["cost"]["cached"] >= 3
        assert [chunks[i] for i in row["reference_ids"]] == row["reference_contexts"]
        assert row["reference"]  # every answer passed the groundedness gate
        if row["type"] == "single":
            assert len(row["reference_ids"]) == 1
        else:
            assert 2 <= len(row["reference_ids"]) <= 3
    assert len({row["query"] for row in rows}) == 12
    assert {row["language"] for row in rows} == {"en", "zh"}


def test_same_seed_same_file_other_seed_other_file(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    files = []
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        out = tmp_path / f"{name}.jsonl"
        result = _generate(demo_home, judge, out, "--size", "6", "--seed", seed)
        assert result.returncode == 0, result.stderr
        files.append(
            [{k: v for k, v in r.items() if k != "cost"} for r in json_lines(out.read_text())]
        )
    assert files[0] == files[1]
    assert files[0] != files[2]


def test_eval_scores_the_generated_set_by_id_with_hybrid(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    out = tmp_path / "qa.jsonl"
    assert _generate(demo_home, judge, out, "--size", "10").returncode == 0
    results = tmp_path / "results.jsonl"
    scored = run(
        "eval",
        str(out),
        "--space",
        "ragmeter-demo",
        "-m",
        "hit_rate,mrr",
        "--retriever",
        "hybrid",
        "--out",
        str(results),
        home=demo_home,
    )
    assert scored.returncode == 0, scored.stderr
    records = json_lines(results.read_text())
    by_metric: dict[str, list[float]] = {}
    for record in records:
        by_metric.setdefault(record["metric_name"], []).append(record["score"])
    assert set(by_metric) == {"hit_rate", "mrr"}
    assert len(by_metric["hit_rate"]) == 10
    assert sum(by_metric["hit_rate"]) / 10 >= 0.7
    # relevance comes from the ids: a row's retrieved ids are judged against its reference_ids
    first = records[0]
    raw = first["raw_dataset"]
    assert raw["reference_ids"] and len(raw["reference_ids"]) <= 3


def test_a_graded_set_grades_source_chunks_2_and_their_documents_1_and_scores_by_level(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "graded.jsonl"
    assert _generate(demo_home, judge, out, "--size", "6", "--graded").returncode == 0
    rows = json_lines(out.read_text())
    assert len(rows) == 6
    from ragmeter.knowledge.spaces import KnowledgeBase

    monkeypatch.setenv("RAGMETER_HOME", str(demo_home))
    chunks, _ = KnowledgeBase().space_chunks("ragmeter-demo", 0, 1000)
    document_of = {str(c.id): c.document for c in chunks}
    for row in rows:
        grades = row["reference_relevance"]
        assert {i for i, g in grades.items() if g == 2} == set(row["reference_ids"])
        sources = {document_of[i] for i in row["reference_ids"]}
        assert {document_of[i] for i in grades} == sources  # only their documents
        assert set(grades.values()) <= {1, 2}
    results = {}
    for level in ("1", "2"):
        done = tmp_path / f"results-{level}.jsonl"
        scored = run(
            "eval", str(out), "--space", "ragmeter-demo", "-m", "recall@5,ndcg@5",
            "--retriever", "hybrid", "--relevance-level", level, "--out", str(done),
            home=demo_home,
        )  # fmt: skip
        assert scored.returncode == 0, scored.stderr
        results[level] = {
            (r["row_index"], r["metric_name"]): r["score"] for r in json_lines(done.read_text())
        }
    # nDCG uses the grades as gains, whatever the level; recall counts what reaches the level
    for key, score in results["1"].items():
        if key[1] == "ndcg@5":
            assert results["2"][key] == score
    assert results["1"] != results["2"]


def test_dry_run_sends_nothing_and_shows_the_cost(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    before = judge.snapshot().get("chat_requests", 0)
    result = _generate(demo_home, judge, tmp_path / "qa.jsonl", "--size", "5", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "chat requests (all pass)" in result.stdout
    line = next(x for x in result.stdout.splitlines() if "chat requests (all pass)" in x)
    assert "15" in line  # three per question
    assert judge.snapshot().get("chat_requests", 0) == before
    assert not (tmp_path / "qa.jsonl").exists()


def test_budget_stops_and_keeps_what_passed_then_resume_completes(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    out = tmp_path / "qa.jsonl"
    cut = _generate(
        demo_home,
        judge,
        out,
        "--size",
        "8",
        "--seed",
        "11",
        "--types",
        "single",
        "--max-requests",
        "9",
        "--max-concurrency",
        "1",
    )
    assert cut.returncode == 0, cut.stderr
    assert "stopped early: --max-requests 9 reached" in cut.stdout
    kept = json_lines(out.read_text())
    assert 1 <= len(kept) < 8
    resumed = _generate(demo_home, judge, out, "--size", "8", "--seed", "11", "--types", "single")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(kept)} rows" in resumed.stdout
    rows = json_lines(out.read_text())
    assert len(rows) == 8 and rows[: len(kept)] == kept
    assert len({tuple(r["reference_ids"]) for r in rows}) == 8
    other_seed = _generate(demo_home, judge, out, "--size", "9", "--seed", "12")
    assert other_seed.returncode == 2 and "--seed 11, not 12" in other_seed.stderr
    fresh = tmp_path / "fresh.jsonl"
    assert (
        _generate(
            demo_home, judge, fresh, "--size", "8", "--seed", "11", "--types", "single"
        ).returncode
        == 0
    )
    strip = lambda rs: [{k: v for k, v in r.items() if k != "cost"} for r in rs]  # noqa: E731
    assert strip(rows) == strip(json_lines(fresh.read_text()))


def test_named_dataset_is_stored(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    result = _generate(
        demo_home, judge, tmp_path / "qa.jsonl", "--size", "3", "--name", "garden-gen"
    )
    assert result.returncode == 0, result.stderr
    assert "stored as dataset 'garden-gen' version 1 (3 rows)" in result.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--size", "0"), "--size"),
        (("--size", "3", "--types", "single=1,cloze=1"), "--types"),
        (("--size", "3", "--language", "fr"), "--language"),
        (("--size", "3", "--max-requests", "2"), "--max-requests"),
        (("--size", "3", "--max-tokens", "50"), "--max-tokens"),
        (("--size", "3", "--docs", "nowhere.md"), "nowhere.md"),
    ],
)
def test_bad_input_exits_2_naming_the_fix(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path, args: tuple[str, ...], named: str
) -> None:
    result = _generate(demo_home, judge, tmp_path / "qa.jsonl", *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert named in result.stderr


def test_unknown_and_empty_spaces_exit_2(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    out = str(tmp_path / "qa.jsonl")
    base = (
        "testset",
        "generate",
        "--size",
        "2",
        "--judge-model",
        "scripted",
        "--judge-base-url",
        judge.url,
        "--out",
        out,
    )
    unknown = run(*base, "--space", "no-such-space", home=demo_home)
    assert unknown.returncode == 2 and "no-such-space" in unknown.stderr
    assert run("space", "create", "empty-space", home=demo_home).returncode == 0
    empty = run(*base, "--space", "empty-space", home=demo_home)
    assert empty.returncode == 2 and "ragmeter space add empty-space" in empty.stderr
    code = tmp_path / "code.md"
    code.write_text("# Setup\n\n```bash\npip install dbgpt\ndbgpt start webserver\n```\n")
    assert run("space", "create", "code-only", home=demo_home).returncode == 0
    assert run("space", "add", "code-only", str(code), home=demo_home).returncode == 0
    boilerplate = run(*base, "--space", "code-only", home=demo_home)
    assert boilerplate.returncode == 2, boilerplate.stderr
    assert "no chunk to write questions from (skipped: 1 code_only)" in boilerplate.stderr
    missing = run(
        "testset",
        "generate",
        "--space",
        "ragmeter-demo",
        "--size",
        "2",
        "--out",
        out,
        home=demo_home,
    )
    assert missing.returncode == 2 and "--judge-model" in missing.stderr


def test_styles_and_personas_are_taken_in_turn(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    out = tmp_path / "qa.jsonl"
    result = _generate(
        demo_home, judge, out, "--size", "4", "--types", "single",
        "--styles", "plain,keywords", "--personas", "a new gardener",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json_lines(out.read_text())
    assert {r["style"] for r in rows} == {"plain", "keywords"}
    assert {r["persona"] for r in rows} == {"a new gardener"}
    keywords = [r["query"] for r in rows if r["style"] == "keywords"]
    assert keywords and not any(q.endswith(("?", "？")) for q in keywords)


def test_docs_and_language_restrict_the_sources(
    demo_home: Path, judge: ScriptedJudgeServer, tmp_path: Path
) -> None:
    one_doc = tmp_path / "tea.jsonl"
    result = _generate(demo_home, judge, one_doc, "--size", "3", "--docs", "tea.md")
    assert result.returncode == 0, result.stderr
    assert {str(r["doc_name"]) for r in json_lines(one_doc.read_text())} == {"zh/tea.md"}
    english = tmp_path / "en.jsonl"
    result = _generate(demo_home, judge, english, "--size", "5", "--language", "en")
    assert result.returncode == 0, result.stderr
    assert "other_language" in result.stdout  # the Chinese chunks, counted as skipped
    rows = json_lines(english.read_text())
    assert len(rows) == 5 and {r["language"] for r in rows} == {"en"}
