"""Golden parity: ragmeter's ranking metrics agree with trec_eval (pytrec_eval) to 1e-9."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import pytrec_eval

from ragmeter.metrics import score_rankings

CUTS = (1, 3, 5, 10, 20)
TOLERANCE = 1e-9


def _random_runs(seed: int, queries: int = 400) -> tuple[list[list[str]], list[list[str]]]:
    """Rank lists of 0-60 ids and relevant sets of 0-15 ids (some never retrieved)."""
    rng = random.Random(seed)
    pool = [f"doc{i}" for i in range(300)]
    retrieved, relevant = [], []
    for q in range(queries):
        ret = [] if q % 37 == 0 else rng.sample(pool, rng.randint(1, 60))
        if q % 41 == 0:
            rel: list[str] = []
        else:
            from_run = rng.sample(ret, min(len(ret), rng.randint(0, 8))) if ret else []
            rel = list(dict.fromkeys(from_run + rng.sample(pool, rng.randint(0, 7))))
            if not rel:
                rel = [rng.choice(pool)]
        retrieved.append(ret)
        relevant.append(rel)
    return retrieved, relevant


def _trec(retrieved: list[list[str]], relevant: list[list[str]], measures: set[str]) -> dict:
    qrels = {}
    for q, rel in enumerate(relevant):
        # a query with no relevant item is judged with one non-relevant doc so trec_eval keeps it
        qrels[str(q)] = dict.fromkeys(rel, 1) if rel else {"judged-not-relevant": 0}
    run = {
        str(q): {d: float(len(ret) - i) for i, d in enumerate(ret)}
        for q, ret in enumerate(retrieved)
    }
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parity_with_trec_eval(seed: int) -> None:
    retrieved, relevant = _random_runs(seed)
    cuts = ",".join(map(str, CUTS))
    measures = {
        f"P.{cuts}",
        f"recall.{cuts}",
        f"ndcg_cut.{cuts}",
        f"map_cut.{cuts}",
        f"success.{cuts}",
    }
    measures |= {"recip_rank", "map", "ndcg"}
    trec = _trec(retrieved, relevant, measures)

    ours_specs = {"recip_rank": "mrr", "map": "map", "ndcg": "ndcg"}
    for k in CUTS:
        ours_specs |= {
            f"P_{k}": f"precision@{k}",
            f"recall_{k}": f"recall@{k}",
            f"ndcg_cut_{k}": f"ndcg@{k}",
            f"map_cut_{k}": f"map@{k}",
            f"success_{k}": f"hit_rate@{k}",
        }
    ours = score_rankings(retrieved, relevant, ours_specs.values())

    checked = 0
    for trec_name, spec in ours_specs.items():
        for q in range(len(retrieved)):
            expected = trec[str(q)][trec_name]
            got = ours[spec][q]
            if not relevant[q]:
                # documented divergence: no relevant item -> null (NaN here), trec_eval says 0
                assert math.isnan(got) and expected == 0.0, (spec, q)
                continue
            assert abs(got - expected) <= TOLERANCE, (spec, q, got, expected)
            checked += 1
    assert checked > 10_000


def test_parity_of_mrr_at_k_with_truncated_runs() -> None:
    retrieved, relevant = _random_runs(7)
    for k in (1, 2, 5, 10):
        truncated = [r[:k] for r in retrieved]
        trec = _trec(truncated, relevant, {"recip_rank"})
        ours = score_rankings(retrieved, relevant, [f"mrr@{k}"])[f"mrr@{k}"]
        for q, rel in enumerate(relevant):
            if rel:
                assert abs(ours[q] - trec[str(q)]["recip_rank"]) <= TOLERANCE


def test_empty_retrieval_scores_zero_like_trec_eval() -> None:
    trec = _trec([[]], [["d1", "d2"]], {"recip_rank", "P.5", "recall.5", "ndcg_cut.5", "map_cut.5"})
    ours = score_rankings([[]], [["d1", "d2"]], ["mrr", "P@5", "recall@5", "ndcg@5", "map@5"])
    assert all(v == 0.0 for v in trec["0"].values())
    assert all(float(v[0]) == 0.0 for v in ours.values())


def test_rows_of_different_lengths_pad_without_leaking() -> None:
    retrieved = [["a"], ["x", "y", "z", "a"], []]
    relevant = [["a"], ["a"], ["a"]]
    scores = score_rankings(retrieved, relevant, ["mrr", "P@4", "hit_rate@3"])
    np.testing.assert_allclose(scores["mrr"], [1.0, 0.25, 0.0])
    np.testing.assert_allclose(scores["precision@4"], [0.25, 0.25, 0.0])
    np.testing.assert_allclose(scores["hit_rate@3"], [1.0, 0.0, 0.0])
