"""A stored run's agreement with human labels over a real ``ragmeter serve`` and from the
command line, on SQLite and PostgreSQL: per metric and per row language, the judge against
each reviewer and their majority, reviewers' alpha and the corrected mean, the same numbers
the statistics give on the same rows; bad input answered 4xx (exit code 2) naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter.reports.agreement import judge_agreement, majority, reviewers_alpha
from ragmeter.reports.calibrated import calibrated_mean
from ragmeter.runs.storage.labels import LabelStore, NewLabel
from ragmeter.store.db import open_store
from tests.integration.helpers import run
from tests.integration.service import ServiceProcess, data, failure, run_rows

pytestmark = pytest.mark.both_stores

RANKS = ["a", "b", "c"]
#: 40 rows, the last 10 in Chinese; every fourth row's reference is not retrieved
ROWS = [
    {
        "query": f"What does step {i} do?" if i < 30 else f"第{i}步做什么？请说明安装过程。",
        "retrieved_ids": RANKS,
        "reference_ids": ["z"] if i % 4 == 0 else [RANKS[i % 3]],
    }
    for i in range(40)
]
HIT = [0.0 if i % 4 == 0 else 1.0 for i in range(40)]
MRR = [0.0 if i % 4 == 0 else 1.0 / (i % 3 + 1) for i in range(40)]
#: ann agrees with hit_rate everywhere; bob labels 30 rows and flips every fifth;
#: carl labels 10 rows, agreeing with ann
LABELS = {
    "ann": {i: HIT[i] for i in range(40)},
    "bob": {i: (1.0 - HIT[i]) if i % 5 == 0 else HIT[i] for i in range(5, 35)},
    "carl": {i: HIT[i] for i in range(0, 40, 4)},
}
#: ann's graded view of mrr on 20 rows (a bit off the judge)
MRR_LABELS = {i: round(min(1.0, MRR[i] + 0.1 * (i % 2)), 3) for i in range(0, 40, 2)}


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, str]]:
    home = tmp_path_factory.mktemp("agreement")
    with ServiceProcess(home, keys=None) as process, process.client(None) as http:
        info = run_rows(http, "labelled", ROWS, ["hit_rate", "mrr", "ndcg@3"])
        labels = [
            NewLabel(i, "hit_rate", name, value)
            for name, values in LABELS.items()
            for i, value in values.items()
        ]
        labels += [NewLabel(i, "mrr", "ann", value) for i, value in MRR_LABELS.items()]
        LabelStore(open_store(process.store_url)).put(info["dataset_id"], labels)
        yield process, info["run_id"]


def _column(values: dict[int, float], rows: range | list[int]) -> np.ndarray:
    return np.array([values.get(i, np.nan) for i in rows])


def _expected_binary(rows: list[int]) -> dict[str, Any]:
    judge = np.array([HIT[i] for i in rows])
    names = sorted(LABELS)
    matrix = np.stack([_column(LABELS[name], rows) for name in names], axis=1)
    agreement = [
        judge_agreement(judge, matrix[:, j], kind="binary", against=name).as_dict()
        for j, name in enumerate(names)
    ]
    vote = majority(matrix, kind="binary")
    agreement.append(judge_agreement(judge, vote, kind="binary", against="majority").as_dict())
    labelled = np.flatnonzero((~np.isnan(matrix)).any(axis=1))
    human = np.nanmean(matrix[labelled], axis=1)
    return {
        "rows": len(rows),
        "labelled_rows": len(labelled),
        "agreement": agreement,
        "reviewers_alpha": reviewers_alpha(matrix, level="nominal").as_dict(),
        "calibrated_mean": calibrated_mean(judge, labelled, human).as_dict(),
    }


def _approx(found: Any, expected: Any) -> None:
    """Equal, floats to 1e-9 (JSON round trips them)."""
    if isinstance(expected, dict):
        assert set(found) == set(expected)
        for key in expected:
            _approx(found[key], expected[key])
    elif isinstance(expected, list | tuple):
        assert len(found) == len(expected)
        for a, b in zip(found, expected, strict=True):
            _approx(a, b)
    elif isinstance(expected, float):
        assert found == pytest.approx(expected, abs=1e-9)
    else:
        assert found == expected


def test_agreement_per_metric_and_language_is_the_statistics_of_the_rows(
    served: tuple[ServiceProcess, str],
) -> None:
    process, run_id = served
    with process.client(None) as http:
        found = data(http.get(f"/evaluate/runs/{run_id}/agreement"))
    assert found["run_id"] == run_id
    hit, mrr, ndcg = found["metrics"]
    assert (ndcg["metric"], ndcg["kind"], ndcg["groups"], ndcg["labels"]) == ("ndcg@3", None, [], 0)
    assert (hit["metric"], hit["kind"], hit["scale"]) == ("hit_rate", "binary", "0–1")
    assert hit["sampling"] == "random"
    assert hit["reviewers"] == ["ann", "bob", "carl"]
    assert hit["labels"] == sum(len(v) for v in LABELS.values())
    assert [g["language"] for g in hit["groups"]] == ["all", "en", "zh"]
    groups = {g.pop("language"): g for g in hit["groups"]}
    _approx(groups["all"], _expected_binary(list(range(40))))
    _approx(groups["en"], _expected_binary(list(range(30))))
    _approx(groups["zh"], _expected_binary(list(range(30, 40))))
    ann = groups["all"]["agreement"][0]
    assert ann["against"] == "ann" and ann["statistics"][0]["value"] == pytest.approx(1.0)
    assert ann["confusion"]["counts"] == [[10, 0], [0, 30]]
    assert groups["all"]["calibrated_mean"]["n_labelled"] == 40
    with process.client(None) as http:  # the run's summary gives the same corrected mean
        summary = data(http.get(f"/evaluate/runs/{run_id}"))["summary"]
    corrected = groups["all"]["calibrated_mean"]
    assert summary["hit_rate"]["calibrated_mean"] == pytest.approx(corrected["value"])
    assert summary["hit_rate"]["calibrated_low"] == pytest.approx(corrected["low"])
    assert summary["mrr"]["calibrated_mean"] == pytest.approx(
        mrr["groups"][0]["calibrated_mean"]["value"]
    )
    assert mrr["kind"] == "continuous" and mrr["reviewers"] == ["ann"]
    only = mrr["groups"][0]
    assert [s["name"] for s in only["agreement"][0]["statistics"]] == ["spearman"]
    assert only["reviewers_alpha"] is None  # one reviewer: no alpha, no majority
    assert only["calibrated_mean"]["n_labelled"] == 20


def test_one_metric_with_a_threshold_and_bad_input(served: tuple[ServiceProcess, str]) -> None:
    process, run_id = served
    with process.client(None) as http:
        path = f"/evaluate/runs/{run_id}/agreement"
        found = data(http.get(path, params={"metric": "mrr", "threshold": 0.5}))
        assert [m["metric"] for m in found["metrics"]] == ["mrr"]
        statistics = found["metrics"][0]["groups"][0]["agreement"][0]["statistics"]
        names = [s["name"] for s in statistics]
        assert names == ["spearman", "cohen_kappa", "balanced_accuracy", "f1", "accuracy"]
        judge = np.array([MRR[i] for i in range(40)])
        human = _column(MRR_LABELS, range(40))
        expected = judge_agreement(judge, human, kind="continuous", threshold=0.5, against="ann")
        _approx(found["metrics"][0]["groups"][0]["agreement"][0], expected.as_dict())
        message = failure(http.get(path, params={"metric": "ndcg"}), 400)
        assert "no metric 'ndcg'" in message and "hit_rate, mrr, ndcg@3" in message
        assert "no run" in failure(http.get("/evaluate/runs/nope/agreement"), 404)
        failure(http.get(path, params={"threshold": "nan"}), 422)


def test_the_command_prints_the_same_agreement(
    served: tuple[ServiceProcess, str], tmp_path: Path
) -> None:
    process, run_id = served
    with process.client(None) as http:
        served_json = data(http.get(f"/evaluate/runs/{run_id}/agreement"))
    env = process.store_env
    done = run("agreement", run_id, "--json", home=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == served_json
    table = run("agreement", run_id[:8], "--metric", "hit_rate", home=tmp_path, env=env)
    assert table.returncode == 0, table.stderr
    assert "hit_rate (binary, 0–1): 80 labels by ann, bob, carl" in table.stdout
    assert "hit_rate · zh · 10 labelled of 10 rows" in table.stdout
    for word in ("cohen_kappa", "majority", "krippendorff_alpha", "calibrated_mean"):
        assert word in table.stdout
    unlabelled = run("agreement", run_id, "--metric", "ndcg@3", home=tmp_path, env=env)
    assert unlabelled.returncode == 0 and "ndcg@3: no labels" in unlabelled.stdout
    bad = run("agreement", run_id, "--metric", "ndcg", home=tmp_path, env=env)
    assert bad.returncode == 2 and "no metric 'ndcg'" in bad.stderr
    missing = run("agreement", "no-such-run", home=tmp_path, env=env)
    assert missing.returncode == 2 and "no run" in missing.stderr
