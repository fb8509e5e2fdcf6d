"""Hypothesis invariants of the ranking metrics, and batch vs per-row agreement."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics import score_rankings
from ragmeter.metrics.retrieval import (
    RetrieverHitRateMetric,
    RetrieverMAPMetric,
    RetrieverMRRMetric,
    RetrieverNDCGMetric,
    RetrieverPrecisionMetric,
    RetrieverRecallMetric,
    judge_exact,
)

ids = st.sampled_from([f"d{i}" for i in range(12)])
rankings = st.lists(st.lists(ids, max_size=15), min_size=1, max_size=8)


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[list[str]], list[list[str]]]:
    retrieved = draw(rankings)
    relevant = [draw(st.lists(ids, min_size=1, max_size=6)) for _ in retrieved]
    return retrieved, relevant


KS = (1, 2, 3, 5, 8, 13, 20)


@given(runs())
@settings(max_examples=200, deadline=None)
def test_scores_are_probabilities(run: tuple[list[list[str]], list[list[str]]]) -> None:
    specs = [
        f"{m}@{k}" for m in ("ndcg", "map", "precision", "recall", "mrr", "hit_rate") for k in KS
    ]
    for values in score_rankings(*run, [*specs, "ndcg", "map", "mrr"]).values():
        assert all(0.0 <= v <= 1.0 + 1e-12 for v in values)


@given(runs())
@settings(max_examples=200, deadline=None)
def test_recall_non_decreasing_in_k(run: tuple[list[list[str]], list[list[str]]]) -> None:
    scores = score_rankings(*run, [f"recall@{k}" for k in KS])
    for row in range(len(run[0])):
        series = [scores[f"recall@{k}"][row] for k in KS]
        assert all(a <= b + 1e-12 for a, b in itertools.pairwise(series))


@given(runs())
@settings(max_examples=200, deadline=None)
def test_precision_positive_implies_hit(run: tuple[list[list[str]], list[list[str]]]) -> None:
    specs = [f"precision@{k}" for k in KS] + [f"hit_rate@{k}" for k in KS]
    scores = score_rankings(*run, specs)
    for k in KS:
        for p, h in zip(scores[f"precision@{k}"], scores[f"hit_rate@{k}"], strict=True):
            if p > 0:
                assert h == 1.0


@given(runs())
@settings(max_examples=150, deadline=None)
def test_mrr_bounded_by_hit_rate_and_recall_full_at_perfect_ranking(
    run: tuple[list[list[str]], list[list[str]]],
) -> None:
    retrieved, relevant = run
    scores = score_rankings(retrieved, relevant, ["mrr@5", "hit_rate@5"])
    assert all(m <= h for m, h in zip(scores["mrr@5"], scores["hit_rate@5"], strict=True))
    perfect = [list(dict.fromkeys(rel)) for rel in relevant]
    ideal = score_rankings(perfect, relevant, ["ndcg", "map", "recall", "mrr"])
    for values in ideal.values():
        assert all(math.isclose(v, 1.0) for v in values)


@given(runs(), st.sampled_from(KS))
@settings(max_examples=100, deadline=None)
def test_per_row_sync_compute_matches_batch(
    run: tuple[list[list[str]], list[list[str]]], k: int
) -> None:
    retrieved, relevant = run
    classes = {
        "hit_rate": RetrieverHitRateMetric,
        "mrr": RetrieverMRRMetric,
        "precision": RetrieverPrecisionMetric,
        "recall": RetrieverRecallMetric,
        "ndcg": RetrieverNDCGMetric,
        "map": RetrieverMAPMetric,
    }
    batch = score_rankings(retrieved, relevant, [f"{name}@{k}" for name in classes])
    for name, cls in classes.items():
        metric = cls(top_k=k, match="exact")
        for row, (ret, rel) in enumerate(zip(retrieved, relevant, strict=True)):
            single = metric.sync_compute(ret, rel).score
            assert single is not None
            assert math.isclose(single, batch[f"{name}@{k}"][row], abs_tol=1e-12)


def _naive_relevance(ret: list[str], rel: list[str]) -> list[bool]:
    seen: set[str] = set()
    out = []
    for item in ret:
        out.append(item in rel and item not in seen)
        if item in rel:
            seen.add(item)
    return out


@given(runs())
@settings(max_examples=300, deadline=None)
def test_judge_matches_naive_reference_with_repeats(
    run: tuple[list[list[str]], list[list[str]]],
) -> None:
    retrieved, relevant = run
    judgements = judge_exact(retrieved, relevant)
    for row, (ret, rel) in enumerate(zip(retrieved, relevant, strict=True)):
        expected = _naive_relevance(ret, rel)
        assert judgements.relevant()[row, : len(ret)].tolist() == expected
        assert not judgements.relevant()[row, len(ret) :].any()
        assert judgements.n_relevant()[row] == len(set(rel))


@given(
    st.lists(st.lists(ids, min_size=9, max_size=40), min_size=1, max_size=4),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_judge_with_many_hits_per_row_matches_naive_reference(
    retrieved: list[list[str]], as_tuples: bool
) -> None:
    relevant = [[f"d{i}" for i in range(12)] for _ in retrieved]  # every id: many hits
    given_lists = [tuple(r) for r in retrieved] if as_tuples else retrieved
    judgements = judge_exact(given_lists, relevant)
    for row, (ret, rel) in enumerate(zip(retrieved, relevant, strict=True)):
        assert judgements.relevant()[row, : len(ret)].tolist() == _naive_relevance(ret, rel)
