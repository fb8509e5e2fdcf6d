"""The public judge suites read from ``shared/judge_suites`` (never copied): the counts its
README gives, the labels' readings (RAGTruth strict and lenient, UHGEval's real and
hallucinated continuations, TREC RAG's two label files), the published agreement of the
UMBRELA labels with NIST's, and bad input naming the file and line."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ragmeter.datasets.judge_suites import SUITES_ENV, load_suite
from ragmeter.errors import ConfigError, DatasetError
from ragmeter.runs.cards import CardRequest, make_card
from tests.integration.judge_suites import judge_suites


def _labels(name: str) -> Counter[float]:
    return Counter(item.human for item in load_suite(name, folder=judge_suites()).items)


def test_ragtruth_counts_strict_and_lenient() -> None:
    suite = load_suite("ragtruth", folder=judge_suites())
    assert len(suite.items) == 2617 and _labels("ragtruth") == {0: 1079, 1: 1538}
    assert _labels("ragtruth-lenient") == {0: 1004, 1: 1613}
    by_task = Counter((i.groups["task"], i.human) for i in suite.items)
    assert by_task[("qa", 0)] == 259 and by_task[("summary", 0)] == 241
    assert by_task[("data2txt", 0)] == 579
    assert Counter(i.groups["task"] for i in suite.items) == {
        "qa": 817, "summary": 900, "data2txt": 900,
    }  # fmt: skip
    assert len({i.groups["model"] for i in suite.items}) == 6
    qa = next(i for i in suite.items if i.groups["task"] == "qa")
    assert qa.row["query"] and len(qa.row["retrieved_contexts"]) == 3
    assert not any(c.lower().startswith("passage") for c in qa.row["retrieved_contexts"])
    data2txt = next(i for i in suite.items if i.groups["task"] == "data2txt")
    assert json.loads(data2txt.row["retrieved_contexts"][0])["name"]
    assert {i.language for i in suite.items} == {"en"}
    assert suite.metric == "faithfulness" and suite.kind == "binary"


def test_evalsbench_is_balanced_and_hides_the_notes() -> None:
    suite = load_suite("evalsbench", folder=judge_suites())
    assert _labels("evalsbench") == {0: 80, 1: 80}
    assert len({i.row["query"] for i in suite.items}) == 80
    assert all("notes" not in i.row and i.row["reference"] for i in suite.items)
    assert suite.metric == "answer_correctness"


def test_uhgeval_gives_a_real_and_a_hallucinated_continuation_per_record() -> None:
    suite = load_suite("uhgeval", folder=judge_suites())
    assert _labels("uhgeval") == {0: 1000, 1: 1000}
    assert {i.language for i in suite.items} == {"zh"}
    writers = Counter(i.groups["model"] for i in suite.items if i.human == 0)
    assert writers["Baichuan2_13B_Chat"] == 666 and writers["Xinyu_7B_Chat"] == 82
    assert {i.groups["model"] for i in suite.items if i.human == 1} == {"real"}
    assert Counter(i.groups["task"] for i in suite.items if i.human == 0)["num"] == 471


def test_trec_rag_pairs_and_the_published_agreement() -> None:
    suite = load_suite("trec_rag", folder=judge_suites())
    assert suite.judge_from_file and len(suite.items) == 10284
    assert _labels("trec_rag") == {0: 3619, 1: 1499, 2: 3760, 3: 1318, 4: 88}
    assert Counter(i.judge for i in suite.items) == {0: 2524, 1: 2399, 2: 3790, 3: 1263, 4: 308}
    card = asyncio.run(make_card(CardRequest("umbrela2", "trec_rag", judge_suites())))
    assert card["judge"]["run"] == "labels from file, no judge run"
    overall = {s["name"]: s for s in card["agreement"]["all"]["statistics"]}
    assert round(overall["weighted_kappa"]["value"], 3) == 0.492
    assert round(overall["accuracy"]["value"], 3) == 0.441
    assert round(card["agreement"]["within_one"]["value"], 3) == 0.830
    binary = card["agreement"]["binary"]
    for cut, kappa, accuracy in ((">=1", 0.367, 0.731), (">=2", 0.431, 0.716)):
        found = {s["name"]: s["value"] for s in binary[cut]["statistics"]}
        assert round(found["cohen_kappa"], 3) == kappa
        assert round(found["accuracy"], 3) == accuracy


def test_a_teams_labelled_file(tmp_path: Path) -> None:
    path = tmp_path / "ours.jsonl"
    lines = [
        {"query": "q", "response": "a", "contexts": ["c"], "human": 1, "groups": {"task": "x"}},
        {"question": "问题是什么？", "answer": "答案。", "contexts": ["上下文"], "human": 0},
    ]
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n")
    suite = load_suite(str(path), metric="faithfulness")
    assert suite.name == "ours" and suite.kind == "binary" and len(suite.items) == 2
    assert suite.items[0].groups == {"task": "x"} and suite.items[1].language is None
    assert "human" not in suite.items[0].row


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"query": "q", "response": "a"}', "line 2 field 'human'"),
        ('{"query": "q", "response": "a", "human": "yes"}', "line 2 field 'human'"),
        ('{"query": "", "response": "a", "human": 1}', "line 2"),
        ('{"query": "q", "human": 1, "language": 3}', "line 2 field 'language'"),
        ("{not json", "line 2: not JSON"),
        ("[1, 2]", "line 2: expected a JSON object"),
    ],
)
def test_a_bad_labelled_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query": "q", "response": "a", "human": 1}\n' + line + "\n")
    with pytest.raises(DatasetError) as caught:
        load_suite(str(path))
    assert str(path) in str(caught.value) and message in str(caught.value)


def test_missing_folder_file_and_malformed_suite_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SUITES_ENV, raising=False)
    with pytest.raises(ConfigError, match="--suites-dir or set RAGMETER_JUDGE_SUITES"):
        load_suite("ragtruth")
    with pytest.raises(ConfigError, match="judge suites folder not found"):
        load_suite("ragtruth", folder=tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="unknown judge suite 'nosuch'"):
        load_suite("nosuch", folder=tmp_path)
    (tmp_path / "ragtruth").mkdir()
    with pytest.raises(DatasetError, match=r"ragtruth_qa\.jsonl: file not found"):
        load_suite("ragtruth", folder=tmp_path)
    for name in ("ragtruth_qa.jsonl", "ragtruth_summary.jsonl", "ragtruth_data2txt.jsonl"):
        (tmp_path / "ragtruth" / name).write_text('{"source_id": 1, "source": "x"}\n')
    with pytest.raises(DatasetError, match=r"ragtruth_qa\.jsonl line 1: not a RAGTruth source"):
        load_suite("ragtruth", folder=tmp_path)
    trec = tmp_path / "trec_rag"
    trec.mkdir()
    nist = judge_suites() / "trec_rag" / "qrels.rag25.test.txt"
    shutil.copy(nist, trec / "qrels.rag25.test-umbrela2.txt")  # a temporary copy, not kept
    (trec / "qrels.rag25.test.txt").write_text("14 0 seg-a 2\n14 0 seg-b\n")
    with pytest.raises(DatasetError, match=r"qrels.rag25.test.txt line 2: expected"):
        load_suite("trec_rag", folder=tmp_path)
    (trec / "qrels.rag25.test.txt").write_text("14 0 seg-a 2\n")
    with pytest.raises(DatasetError, match="judged in one file only"):
        load_suite("trec_rag", folder=tmp_path)
    evals = tmp_path / "evalsbench"
    evals.mkdir()
    (evals / "benchmark_df.csv").write_text("question,grading_notes,target,response\nq,n,maybe,r\n")
    with pytest.raises(DatasetError, match=r"benchmark_df.csv line 2 field 'target'"):
        load_suite("evalsbench", folder=tmp_path)
