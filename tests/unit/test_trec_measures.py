"""trec_eval's measures on graded relevance against pytrec_eval (trec_eval compiled as a
Python extension) on random graded qrels, to 1e-9, at several relevance levels.

pytrec_eval embeds trec_eval 9; ragmeter follows trec_eval 10, whose own expected outputs are
checked in tests/peer_suites. The two versions differ in one place these tests step around:
interpolated precision turns a recall level into a count of relevant items by rounding in 10
(``lround``) and by adding 0.9 and truncating in 9, so iprec_at_recall and 11pt_avg are
compared here only where the two agree, with one relevant item or none.
"""

from __future__ import annotations

import math
from typing import Any

import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics import create_metric, score_rankings

docs = [f"d{i:02d}" for i in range(14)]

#: ragmeter's name -> pytrec_eval's, for measures both compute the same way
SAME = {
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret",
    "map": "map",
    "r_precision": "Rprec",
    "bpref": "bpref",
    "mrr": "recip_rank",
    "infap": "infAP",
    "binary_gain": "binG",
    "normalized_gain": "G",
    "ndcg": "ndcg",
    "ndcg_rel": "ndcg_rel",
    "r_ndcg": "Rndcg",
    "set_precision": "set_P",
    "set_relative_precision": "set_relative_P",
    "recall": "set_recall",
    "set_map": "set_map",
    "set_f": "set_F",
    "utility": "utility",
    **{f"P_{k}": f"P_{k}" for k in (5, 10, 15, 20)},
    **{f"recall_{k}": f"recall_{k}" for k in (5, 10, 15, 20)},
    **{f"ndcg_cut_{k}": f"ndcg_cut_{k}" for k in (5, 10, 15, 20)},
    **{f"map_cut_{k}": f"map_cut_{k}" for k in (5, 10, 15, 20)},
    **{f"relative_P_{k}": f"relative_P_{k}" for k in (5, 10, 15, 20)},
    **{f"success_{k}": f"success_{k}" for k in (1, 5, 10)},
    **{f"Rprec_mult_{m}": f"Rprec_mult_{m}" for m in ("0.20", "0.60", "1.00", "2.00")},
}
IPREC = {f"iprec_at_recall_{r}": f"iprec_at_recall_{r}" for r in ("0.00", "0.50", "1.00")}


@st.composite
def collections(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Queries with graded qrels (grades -1 to 4: negative is "in the pool, not assessed",
    0 judged not relevant; at least one grade >= 0, which trec_eval needs) and runs with
    distinct scores, some queries without a relevant document."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(draw(st.integers(1, 6))):
        judged = draw(st.dictionaries(st.sampled_from(docs), st.integers(-1, 4), min_size=1))
        if max(judged.values()) < 0:  # trec_eval loops forever on a query judged only < 0
            judged[next(iter(judged))] = 0
        ranked = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=14, unique=True))
        qrels[f"q{q}"] = judged
        run[f"q{q}"] = {doc: float(len(ranked) - rank) for rank, doc in enumerate(ranked)}
    return qrels, run


def _ours(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], names: list[str], level: int
) -> dict[str, Any]:
    qids = sorted(run)
    retrieved = [sorted(run[q], key=lambda d: -run[q][d]) for q in qids]
    scores = score_rankings(
        retrieved, [qrels[q] for q in qids], names, relevance_level=level, no_relevant="zero"
    )
    return {name: scores[create_metric(name).metric_name] for name in names}  # trec_eval's


def _compare(
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    pairs: dict[str, str],
    level: int,
    only: Any = None,
) -> None:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(pairs.values()), relevance_level=level)
    theirs = evaluator.evaluate(run)
    ours = _ours(qrels, run, list(pairs), level)
    for name, trec in pairs.items():
        for i, q in enumerate(sorted(run)):
            if only is not None and not only(qrels[q], level):
                continue
            got, want = float(ours[name][i]), theirs[q][trec]
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9), (
                f"{name} on {q} at level {level}: ragmeter {got!r}, trec_eval {want!r}; "
                f"qrels {qrels[q]}, run {run[q]}"
            )


@given(collections(), st.integers(1, 3))
@settings(max_examples=300, deadline=None)
def test_graded_measures_equal_trec_eval(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]], level: int
) -> None:
    qrels, run = data
    _compare(qrels, run, SAME, level)


def _at_most_one_relevant(judged: dict[str, int], level: int) -> bool:
    return sum(g >= level for g in judged.values()) <= 1


@given(collections(), st.integers(1, 3))
@settings(max_examples=200, deadline=None)
def test_interpolated_precision_equals_trec_eval_where_its_versions_agree(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]], level: int
) -> None:
    qrels, run = data
    _compare(qrels, run, IPREC, level, only=_at_most_one_relevant)


@given(collections())
@settings(max_examples=200, deadline=None)
def test_ndcg_with_exponential_gains_is_ndcg_of_the_mapped_grades(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]],
) -> None:
    """ir_measures' dcg='exp-log2' is trec_eval's ndcg with gain 2**g - 1 per grade."""
    qrels, run = data
    mapped = {q: {d: (2**g - 1 if g > 0 else g) for d, g in j.items()} for q, j in qrels.items()}
    theirs = pytrec_eval.RelevanceEvaluator(mapped, {"ndcg", "ndcg_cut_5"}).evaluate(run)
    ours = _ours(qrels, run, ["ndcg(dcg=exp-log2)", "ndcg(dcg=exp-log2)@5"], 1)
    for i, q in enumerate(sorted(run)):
        assert math.isclose(ours["ndcg(dcg=exp-log2)"][i], theirs[q]["ndcg"], abs_tol=1e-9)
        assert math.isclose(ours["ndcg(dcg=exp-log2)@5"][i], theirs[q]["ndcg_cut_5"], abs_tol=1e-9)


@given(collections(), st.dictionaries(st.integers(0, 4), st.integers(0, 9), max_size=3))
@settings(max_examples=200, deadline=None)
def test_ndcg_with_given_gains_is_ndcg_of_the_mapped_grades(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]], gains: dict[int, int]
) -> None:
    """trec_eval's ``ndcg.1=3,2=9`` (ragmeter's ``ndcg(gains={1:3,2:9})``) is its ndcg of
    the grades mapped to those gains. (pytrec_eval aborts on some parameter strings, so the
    mapping is made here instead.)"""
    qrels, run = data
    mapped = {
        q: {d: gains.get(g, g) if g >= 0 else g for d, g in j.items()} for q, j in qrels.items()
    }
    theirs = pytrec_eval.RelevanceEvaluator(mapped, {"ndcg"}).evaluate(run)
    spec = "ndcg(gains={" + ",".join(f"{g}:{v}" for g, v in sorted(gains.items())) + "})"
    ours = _ours(qrels, run, [spec], 1)
    for i, q in enumerate(sorted(run)):
        assert math.isclose(ours[spec][i], theirs[q]["ndcg"], abs_tol=1e-9), (q, qrels[q], run[q])


@given(collections())
@settings(max_examples=100, deadline=None)
def test_graded_ndcg_is_within_zero_and_one_and_perfect_for_the_ideal_ranking(
    data: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]],
) -> None:
    qrels, run = data
    scores = _ours(qrels, run, ["ndcg", "ndcg@3"], 1)
    assert all(0.0 <= v <= 1.0 + 1e-12 for values in scores.values() for v in values)
    ideal = {q: sorted(j, key=lambda d: -j[d]) for q, j in qrels.items()}
    perfect = score_rankings(
        [ideal[q] for q in sorted(qrels)], [qrels[q] for q in sorted(qrels)], ["ndcg"]
    )["ndcg"]
    for q, value in zip(sorted(qrels), perfect, strict=True):
        if any(g > 0 for g in qrels[q].values()):
            assert math.isclose(value, 1.0)
        else:
            assert math.isnan(value)  # no gain to rank: null, as every ranking metric is
