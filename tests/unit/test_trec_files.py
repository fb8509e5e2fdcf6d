"""TREC qrels and run files: reading them as trec_eval does, every bad line stopping with the
file, line and field; and the rows they make (trec_eval's ranking, depth, complete, skips)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from ragmeter.datasets import DatasetLimits
from ragmeter.datasets.trec import qrels_from_mapping, read_qrels, read_run, run_from_mapping
from ragmeter.datasets.trec_rows import rank, trec_rows
from ragmeter.errors import ConfigError, DatasetError, LimitError
from tests.peer_suites._trec import trec_eval_file

QRELS = """\
# judged by hand
q1 0 d1 1
q1 0 d2 0

q1 0 d3 2
q2 0 d9 -1
q2 0 d8 1
"""
RUN = """\
q1 Q0 d1 1 0.5 mine
q1 Q0 d2 2 0.9 mine
q1 Q0 d4 3 0.9 mine
q3 Q0 d1 1 1.0 mine
q2\tQ0\td8\t1\t-2e-1\tlast   and more fields, ignored
"""


def _write(tmp_path: Path, name: str, text: str, *, compress: bool = False) -> Path:
    path = tmp_path / name
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def _error(exc: pytest.ExceptionInfo[DatasetError]) -> tuple[str | None, int | None, str | None]:
    return exc.value.source, exc.value.line, exc.value.field


def test_qrels_keep_every_grade_and_skip_comments_and_blank_lines(tmp_path: Path) -> None:
    qrels = read_qrels(_write(tmp_path, "qrels.txt", QRELS))
    assert qrels == {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d9": -1, "d8": 1}}


def test_a_run_keeps_scores_and_the_last_lines_runid(tmp_path: Path) -> None:
    run = read_run(_write(tmp_path, "run.txt", RUN))
    assert run.scores == {
        "q1": {"d1": 0.5, "d2": 0.9, "d4": 0.9},
        "q3": {"d1": 1.0},
        "q2": {"d8": -0.2},
    }
    assert run.runid == "last"


def test_gzip_files_are_read_by_their_content(tmp_path: Path) -> None:
    qrels = read_qrels(_write(tmp_path, "qrels.gz", QRELS, compress=True))
    run = read_run(_write(tmp_path, "run-without-suffix", RUN, compress=True))
    assert qrels["q1"]["d3"] == 2 and run.scores["q1"]["d4"] == 0.9


@pytest.mark.parametrize(
    ("line", "field", "says"),
    [
        ("q1 0 d1", "REL", "missing: the line has 3 field(s); a qrels line is QID ITER DOCID REL"),
        ("q1", "ITER", "missing"),
        ("q1 0 d1 1 extra", "REL", "followed by 1 more field(s) ('extra')"),
        ("q1 0 d1 x", "REL", "expected an integer relevance grade, got 'x'"),
        ("q1 0 d1 1.5", "REL", "got '1.5'"),
        ("q1 0 d1 1" + "0" * 30, "REL", "expected an integer"),
        ("q1 0 d1 1001", "REL", "grade 1001 is outside -1,000 to 1,000, the grades ragmeter keeps"),
        ("q1 0 d2 1", "DOCID", "'d2' is given twice for query 'q1'"),
    ],
)
def test_a_bad_qrels_line_names_file_line_and_field(
    tmp_path: Path, line: str, field: str, says: str
) -> None:
    path = _write(tmp_path, "qrels.txt", "q1 0 d1 1\n# note\nq1 0 d2 0\n" + line + "\n")
    with pytest.raises(DatasetError) as exc:
        read_qrels(path, name="qrels.txt")
    assert _error(exc) == ("qrels.txt", 4, field)
    assert says in str(exc.value)
    assert str(exc.value).startswith(f"qrels.txt line 4 field '{field}': ")


@pytest.mark.parametrize(
    ("line", "field", "says"),
    [
        ("q1 Q0 d9 1 0.3", "RUNID", "missing: the line has 5 field(s); a run line is QID Q0 "),
        ("q1 Q0 d9 1 high mine", "SCORE", "expected a number, got 'high'"),
        ("q1 Q0 d9 1 nan mine", "SCORE", "got 'nan'"),
        ("q1 Q0 d9 1 1_0 mine", "SCORE", "got '1_0'"),
        ("q1 Q0 d9 1 0x1p3 mine", "SCORE", "got '0x1p3'"),
        ("q1 Q0 d1 7 0.1 mine", "DOCID", "'d1' is given twice for query 'q1'"),
    ],
)
def test_a_bad_run_line_names_file_line_and_field(
    tmp_path: Path, line: str, field: str, says: str
) -> None:
    path = _write(tmp_path, "run.txt", "q1 Q0 d1 1 0.5 mine\n\nq1 Q0 d2 2 1e-3 mine\n" + line)
    with pytest.raises(DatasetError) as exc:
        read_run(path)
    assert _error(exc) == (str(path), 4, field)
    assert says in str(exc.value)


def test_scores_read_as_trec_eval_reads_them(tmp_path: Path) -> None:
    text = "".join(
        f"q Q0 d{i} {i} {score} r\n"
        for i, score in enumerate(["3", "-2.5", "+.5", "1E2", "7.", "inf", "-Infinity"])
    )
    run = read_run(_write(tmp_path, "run.txt", text))
    assert list(run.scores["q"].values()) == [
        3.0,
        -2.5,
        0.5,
        100.0,
        7.0,
        float("inf"),
        -float("inf"),
    ]


def test_text_that_is_not_utf8_names_its_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q1 0 d1 1\nq1 0 caf\xe9 1\n")
    with pytest.raises(DatasetError) as exc:
        read_qrels(path, name="qrels.txt")
    assert _error(exc) == ("qrels.txt", 2, "DOCID") and "not UTF-8" in str(exc.value)


def test_empty_missing_and_damaged_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="holds no judgements"):
        read_qrels(_write(tmp_path, "empty", "# nothing\n\n"))
    with pytest.raises(DatasetError, match="holds no results"):
        read_run(_write(tmp_path, "empty.gz", "", compress=True))
    with pytest.raises(DatasetError, match="no such file"):
        read_run(tmp_path / "absent.txt")
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress(RUN.encode() * 50)[:60])
    with pytest.raises(DatasetError, match="cannot read it after line"):
        read_run(cut, name="cut.gz")


def test_decompressed_text_over_the_cap_is_refused_naming_the_setting(tmp_path: Path) -> None:
    path = _write(tmp_path, "big.gz", "q1 0 d1 1\n" + "# padding\n" * 100_000, compress=True)
    assert path.stat().st_size < 10_000
    limits = DatasetLimits(max_bytes=100_000, section="[server]")
    with pytest.raises(LimitError) as exc:
        read_qrels(path, name="big.gz", limits=limits)
    assert exc.value.status == 413 and exc.value.setting == "[server] max_upload_mb"
    assert "big.gz holds more than 0.1 MB of text (decompressed)" in str(exc.value)


def test_pytrec_eval_dicts_are_checked() -> None:
    assert qrels_from_mapping({"q": {"d": 2}}) == {"q": {"d": 2}}
    # integers of any kind, and integral floats (as pandas writes grades), are grades
    assert qrels_from_mapping({"q": {"d": 2.0, "e": np.int64(1)}}) == {"q": {"d": 2, "e": 1}}
    assert run_from_mapping({"q": {"d": 1}}, runid="r").scores == {"q": {"d": 1.0}}
    bad = [
        (
            lambda: qrels_from_mapping({"q": {"d": 1.5}}),
            "query 'q' document 'd': expected an integer",
        ),
        (lambda: qrels_from_mapping({"q": {"d": True}}), "got bool True"),
        (lambda: qrels_from_mapping({1: {"d": 1}}), "query ids must be strings, got int 1"),
        (lambda: qrels_from_mapping({"q": {"d": -1001}}), "'d': grade -1001 is outside"),
        (lambda: qrels_from_mapping({"q": ["d"]}), "query 'q': expected a dict"),
        (lambda: qrels_from_mapping([("q", {})]), "expected a path or a dict"),
        (lambda: run_from_mapping({"q": {"d": float("nan")}}), "expected a number (the score)"),
        (lambda: run_from_mapping({"q": {2: 1.0}}), "document ids must be strings"),
        (lambda: run_from_mapping({}), "holds no queries"),
    ]
    for call, says in bad:
        with pytest.raises(DatasetError) as exc:
            call()
        assert says in str(exc.value)


# -- rows ----------------------------------------------------------------------------------


def test_ranking_is_by_score_then_id_both_descending() -> None:
    scores = {"d1": 0.5, "d2": 0.9, "d4": 0.9, "D9": 0.9, "é": 0.1, "z": 0.1}
    assert rank(scores) == ["d4", "d2", "D9", "d1", "é", "z"]
    assert rank(scores, depth=2) == ["d4", "d2"]


def test_rows_pair_judged_queries_in_query_id_order(tmp_path: Path) -> None:
    qrels = read_qrels(_write(tmp_path, "qrels.txt", QRELS + "q10 0 d1 1\nq0 0 dx 1\n"))
    run = read_run(_write(tmp_path, "run.txt", RUN + "q10 Q0 d1 1 3 last\n"))
    made = trec_rows(qrels, run)
    assert [r["query"] for r in made.rows] == ["q1", "q10", "q2"]
    assert made.rows[0] == {
        "query": "q1",
        "retrieved_ids": ["d4", "d2", "d1"],
        "reference_relevance": {"d1": 1, "d2": 0, "d3": 2},
    }
    assert made.runid == "last" and made.unjudged == ("q3",) and made.missing == ("q0",)
    note = made.skipped_note("run.txt", "qrels.txt")
    assert note is not None
    assert note == (
        "1 query of run.txt has no judgements in qrels.txt: not evaluated (q3); 1 judged "
        "query is not in run.txt: skipped (q0; --complete scores them 0)"
    )


def test_complete_evaluates_missing_queries_with_no_results_and_depth_cuts(
    tmp_path: Path,
) -> None:
    qrels = read_qrels(_write(tmp_path, "qrels.txt", QRELS + "q0 0 dx 1\n"))
    run = read_run(_write(tmp_path, "run.txt", RUN))
    made = trec_rows(qrels, run, complete=True, depth=1)
    assert [(r["query"], r["retrieved_ids"]) for r in made.rows] == [
        ("q0", []),
        ("q1", ["d4"]),
        ("q2", ["d8"]),
    ]
    assert made.missing == ("q0",) and "skipped" not in (made.skipped_note() or "")
    with pytest.raises(ConfigError, match="depth must be a whole number >= 1, got 0"):
        trec_rows(qrels, run, depth=0)


def test_no_shared_query_is_an_error_and_rows_are_capped(tmp_path: Path) -> None:
    qrels = qrels_from_mapping({"a": {"d": 1}, "b": {"d": 1}})
    with pytest.raises(DatasetError, match="no query of the run has judgements in the qrels"):
        trec_rows(qrels, run_from_mapping({"c": {"d": 1.0}}))
    run = run_from_mapping({"a": {"d": 1.0}, "b": {"d": 1.0}})
    with pytest.raises(LimitError) as exc:
        trec_rows(qrels, run, limits=DatasetLimits(max_rows=1, section="[server]"))
    assert "make 2 rows" in str(exc.value) and exc.value.setting == "[server] max_rows"


def test_trec_evals_test_files_rank_as_trec_eval_does() -> None:
    """The first 20 grades of each ranking are trec_eval's own ``relstring_20`` lines."""
    qrels = read_qrels(trec_eval_file("qrels.rel_level"))
    made = trec_rows(qrels, read_run(trec_eval_file("results.test")))
    expected = {
        line.split("\t")[1]: line.split("\t")[2].strip().strip("'")
        for line in trec_eval_file("out.test.aql").read_text().splitlines()
        if line.startswith("relstring_20")
    }
    marks = {}
    for row in made.rows:
        grades = [row["reference_relevance"].get(d) for d in row["retrieved_ids"][:20]]
        marks[row["query"]] = "".join(
            "-" if g is None else "." if g < 0 else ">" if g > 9 else str(g) for g in grades
        )
    assert marks == expected and len(marks) == 3
    assert made.runid == "STANDARD"


def test_trec_evals_files_with_extra_fields_and_gzip_are_read() -> None:
    trunc = read_run(trec_eval_file("results.trunc"))
    assert sum(len(v) for v in trunc.scores.values()) == 584  # trec_eval's num_ret, -c
    qrels = read_qrels(trec_eval_file("qrels.comment.test.gz"))
    run = read_run(trec_eval_file("results.comment.test.gz"))
    made = trec_rows(qrels, run)
    assert len(made.rows) == 31 and len(made.unjudged) == 270 and made.runid == "comment.test"
