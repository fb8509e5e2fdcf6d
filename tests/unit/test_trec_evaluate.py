"""``ragmeter.evaluate_trec`` and trec_eval's table: the text ``trec_eval -q`` prints for
given values (names, order, number formats), the ``all`` aggregates, and values that agree
with pytrec_eval's on trec_eval's own files."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pytrec_eval

import ragmeter
from ragmeter.datasets.trec import read_qrels, read_run
from ragmeter.errors import DatasetError
from ragmeter.metrics.retrieval.trec import expand_measures
from ragmeter.runs.views.trec_table import format_trec, relstring, trec_values
from tests.peer_suites._trec import trec_eval_file


def _expected(name: str) -> list[tuple[str, str, str]]:
    lines = trec_eval_file(name).read_text().splitlines()
    return [(n.strip(), q, v) for n, q, v in (x.split("\t") for x in lines)]


def test_the_text_is_trec_evals_for_its_own_values() -> None:
    """Given trec_eval's own values of out.test.aq, the formatter writes its lines exactly:
    names padded as it pads them, integers and 4 decimals, queries then ``all``."""
    measures = expand_measures(["all_trec"])
    expected = _expected("out.test.aq")
    per_query: dict[str, dict[str, float | int | str]] = {}
    over_all: dict[str, float | int | str] = {}
    integer = {m.name for m in measures if m.integer}
    for name, qid, text in expected:
        value: float | int | str = (
            text.strip("'")
            if name.startswith("relstring")
            else int(text)
            if name in integer
            else text
            if name == "runid"
            else float(text)
        )
        (over_all if qid == "all" else per_query.setdefault(qid, {}))[name] = value
    text = format_trec(measures, (per_query, over_all))
    assert text == trec_eval_file("out.test.aq").read_text()
    summary = format_trec(measures, (per_query, over_all), per_query=False)
    assert all("\tall\t" in line for line in summary.splitlines())


def test_all_is_the_mean_sum_or_geometric_mean_of_the_queries() -> None:
    measures = expand_measures(["num_q", "num_ret", "map", "gm_map", "relstring.3"])
    assert [m.spec for m in measures] == ["num_q", "num_ret", "map", "gm_map", None]
    rows = [
        {"query": "a", "retrieved_ids": ["x", "y", "z", "w"], "reference_relevance": {"x": 12}},
        {"query": "b", "retrieved_ids": ["y"], "reference_relevance": {"y": -1, "z": 1}},
    ]
    scores = {
        "num_q": [1.0, 1.0],
        "num_ret": [4.0, 1.0],
        "map": [0.5, 0.0],
        "gm_map": [0.5, 0.0],
    }
    per_query, over_all = trec_values(measures, rows, scores, "mine")
    assert over_all == {
        "num_q": 2,
        "num_ret": 5,
        "map": 0.25,
        "gm_map": pytest.approx(math.exp((math.log(0.5) + math.log(1e-5)) / 2)),
    }
    assert per_query == {
        "a": {"num_ret": 4, "map": 0.5, "relstring_3": ">--"},
        "b": {"num_ret": 1, "map": 0.0, "relstring_3": "."},
    }
    text = format_trec(measures, (per_query, over_all))
    assert text.splitlines()[:3] == [
        "num_ret               \ta\t4",
        "map                   \ta\t0.5000",
        "relstring_3           \ta\t'>--'",
    ]
    assert text.splitlines()[-4:-2] == [
        "num_q                 \tall\t2",
        "num_ret               \tall\t5",
    ]
    assert relstring(["d1", "d2"], {"d1": 0, "d2": 3}, 10) == "03"


_PYTREC = ("map", "ndcg", "P_5", "P_10", "recip_rank", "Rprec", "bpref", "num_rel_ret")


@pytest.mark.parametrize(("qrels", "level"), [("qrels.test", 1), ("qrels.rel_level", 2)])
def test_values_agree_with_pytrec_eval(qrels: str, level: int) -> None:
    judged = read_qrels(trec_eval_file(qrels))
    scores = read_run(trec_eval_file("results.test")).scores
    theirs = pytrec_eval.RelevanceEvaluator(judged, set(_PYTREC), relevance_level=level).evaluate(
        scores
    )
    ours = ragmeter.evaluate_trec(judged, scores, list(_PYTREC), relevance_level=level)
    for qid, values in theirs.items():
        for name in _PYTREC:
            assert ours.per_query[qid][name] == pytest.approx(values[name], abs=1e-9), (qid, name)


def test_dicts_files_skips_and_storing(tmp_path: Path) -> None:
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}, "q3": {"d9": 0}}
    run = {"q1": {"d1": 0.2, "d2": 0.9}, "q3": {"d9": 1.0}, "q4": {"d1": 1.0}}
    result = ragmeter.evaluate_trec(qrels, run, "P.1,2,map,num_q", runid="mine")
    assert result.runid == "mine" and result.unjudged == ("q4",) and result.missing == ("q2",)
    assert result.per_query["q1"]["P_1"] == 0.0 and result.per_query["q1"]["P_2"] == 0.5
    assert result.per_query["q3"]["map"] == 0.0  # judged, nothing relevant: 0, not null
    assert result.all["num_q"] == 2 and result.all["map"] == 0.25
    note = result.skipped_note()
    assert note is not None and "not evaluated (q4)" in note and "(q2; complete=True" in note
    complete = ragmeter.evaluate_trec(qrels, run, ["map", "num_q"], complete=True, store=True)
    assert complete.all["num_q"] == 3 and complete.all["map"] == pytest.approx(0.5 / 3)
    assert complete.report.run_id is not None
    stored = ragmeter.load_run(complete.report.run_id)
    assert len(stored.report()) == 6
    bad = tmp_path / "qrels.txt"
    bad.write_text("q1 0 d1 yes\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"qrels\.txt line 1 field 'REL'"):
        ragmeter.evaluate_trec(bad, run)
