"""The gate on means corrected by human labels, as a user runs it on a stored run (a SQLite
file, then a PostgreSQL database): a "judge" whose scores run 0.2 above the truth passes a
bound on its own mean and fails the same bound with --calibrated, where the truth fails it;
the corrected interval holds the truth; a metric without labels fails saying so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.gates.gate import gate
from ragmeter.runs.review.queues import make_queue
from ragmeter.runs.review.sampling import ReviewOptions
from ragmeter.runs.storage.labels import LabelStore, NewLabel
from ragmeter.runs.storage.review_queues import ReviewQueueStore
from ragmeter.runs.storage.store import RunStore
from tests.integration.helpers import run

pytestmark = pytest.mark.usefixtures("store_home")  # each test on SQLite and on PostgreSQL

ROWS, LABELLED, SEED = 2000, 200, 7


def _truth_and_rows() -> tuple[np.ndarray, list[dict[str, object]]]:
    """Rows whose hit_rate is 1 on 90% of them, and people's verdicts: the hits of 2 rows
    in 9 are not relevant to them, so the true mean is 0.7."""
    rng = np.random.default_rng(SEED)
    hit = rng.random(ROWS) < 0.9
    truth = hit & (rng.random(ROWS) >= 2 / 9)
    rows = [
        {
            "id": f"r{i}",
            "query": f"question {i}",
            "retrieved_ids": ["a", "b"],
            "reference_ids": ["a" if hit[i] else "z"],
        }
        for i in range(ROWS)
    ]
    return truth.astype(np.float64), rows


def _stored_run(tmp_path: Path, labelled: int = LABELLED) -> tuple[str, np.ndarray]:
    truth, rows = _truth_and_rows()
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = run("eval", str(data), "-m", "hit_rate,mrr")
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"run ([0-9a-f]{32}) stored", done.stdout)
    assert found is not None, done.stdout
    run_id = found.group(1)
    store = KnowledgeBase().store
    picked = np.random.default_rng(SEED + 1).choice(ROWS, labelled, replace=False)
    labels = LabelStore(store)
    dataset_id = labels.dataset_of_run(run_id)
    if labelled:
        labels.put(
            dataset_id,
            [NewLabel(int(i), "hit_rate", "ann", float(truth[i])) for i in picked],
            run_id=run_id,
        )
    assert RunStore(store).get(run_id).dataset_id == dataset_id
    return run_id, truth


def test_the_calibrated_gate_follows_the_truth_where_the_judge_misleads(
    store_url: str, tmp_path: Path
) -> None:
    run_id, truth = _stored_run(tmp_path)
    own = run("gate", run_id, "--rule", "hit_rate.mean >= 0.8")
    assert own.returncode == 0, own.stdout + own.stderr  # the judge's mean, about 0.9
    corrected = run("gate", run_id, "--rule", "hit_rate.mean >= 0.8", "--calibrated")
    assert corrected.returncode == 1, corrected.stdout + corrected.stderr
    assert "hit_rate.calibrated_mean >= 0.8" in corrected.stdout
    assert "200 labelled of 2000 scored rows" in corrected.stdout
    result = gate(run_id, ["hit_rate.calibrated_low >= 0.6", "hit_rate.calibrated_high < 0.85"])
    assert result.passed, [(o.rule.name, o.value, o.detail) for o in result.outcomes]
    low, high = (o.value for o in result.outcomes)
    assert low is not None and high is not None
    assert low <= truth.mean() <= high  # the interval holds the truth (0.7)
    mean_now = gate(run_id, ["hit_rate.mean >= 0"]).outcomes[0].value
    assert mean_now is not None and not low <= mean_now <= high  # the judge's mean is outside


def test_a_metric_without_labels_fails_the_calibrated_gate_saying_why(
    store_url: str, tmp_path: Path
) -> None:
    run_id, _ = _stored_run(tmp_path)
    done = run("gate", run_id, "--rule", "mrr.mean >= 0.1", "--calibrated")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no human label of mrr" in done.stdout
    bad = run("gate", run_id, "--rule", "mrr.calibrated_middle >= 0.1")
    assert bad.returncode == 2 and "calibrated_mean" in bad.stderr + bad.stdout


def test_the_summary_and_run_view_give_the_calibrated_mean(store_url: str, tmp_path: Path) -> None:
    run_id, truth = _stored_run(tmp_path)
    runs = RunStore(KnowledgeBase().store)
    report = runs.report(run_id)
    summary = report.summary()
    hit, mrr = summary["hit_rate"], summary["mrr"]
    assert hit["labelled"] == LABELLED and "calibrated_mean" not in mrr
    low, high = hit["calibrated_low"], hit["calibrated_high"]
    assert isinstance(low, float) and isinstance(high, float) and low <= truth.mean() <= high
    stored = runs.summary(runs.get(run_id))  # what the dashboard and the API show
    assert stored["hit_rate"]["calibrated_mean"] == pytest.approx(hit["calibrated_mean"])
    shown = run("runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert "corrected by labels" in shown.stdout and ", 200" in shown.stdout
    for language, heading in (("en", "Corrected by human labels"), ("zh", "经人工标注校正")):
        page = tmp_path / f"report-{language}.html"
        done = run("report", run_id, "--out", str(page), "--language", language)
        assert done.returncode == 0, done.stdout + done.stderr
        html = page.read_text(encoding="utf-8")
        assert heading in html and f"{hit['calibrated_mean']:.4f}" in html
        # the judge's agreement with the labels: one reviewer, pass/fail statistics
        title = {"en": "Judge and people", "zh": "评审模型与人工标注"}[language]
        kappa = {"en": "Cohen&#x27;s κ", "zh": "Cohen κ"}[language]
        assert title in html and kappa in html and "hit_rate" in html
        confusion = {"en": "against ann&#x27;s (columns)", "zh": "对比ann的判断（列）"}[language]
        assert "<table class='confusion'>" in html and confusion in html


def test_compare_gives_each_runs_corrected_mean(store_url: str, tmp_path: Path) -> None:
    run_id, _ = _stored_run(tmp_path)
    other, _ = _stored_run(tmp_path)  # the same rows again: the same dataset version
    done = run("runs", "compare", run_id, other, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    metrics = {m["metric_name"]: m for m in json.loads(done.stdout)["metrics"]}
    hit, mrr = metrics["hit_rate"], metrics["mrr"]
    assert hit["base_calibrated"]["n_labelled"] == LABELLED
    assert hit["other_calibrated"]["value"] == pytest.approx(hit["base_calibrated"]["value"])
    assert mrr["base_calibrated"] is None and mrr["other_calibrated"] is None
    table = run("runs", "compare", run_id, other)
    assert "corrected by human labels" in table.stdout and "200 labels" in table.stdout
    markdown = run("runs", "compare", run_id, other, "--markdown")
    assert "| corrected by human labels | base | candidate |" in markdown.stdout


def test_a_stratified_queue_weights_its_labels_by_their_chance(
    store_url: str, tmp_path: Path
) -> None:
    """Equal counts from the misses (about 200 rows) and the hits (about 1,800): the hits'
    labels stand for nine times as many rows. Unweighted, the labels' mean is far below the
    truth; weighted by 1/chance, the corrected interval holds it. Rows labelled outside the
    queue are left out, and the summary says so."""
    run_id, truth = _stored_run(tmp_path, labelled=0)
    store = KnowledgeBase().store
    runs, queues = RunStore(store), ReviewQueueStore(store)
    options = ReviewOptions("stratified", 100, ("ann",), strata=2, seed=3)
    queue = make_queue(runs, queues, run_id, "hit_rate", options, "ann")
    items = queues.items(queue.id, "ann")
    assert len({item.probability for item in items}) == 2  # a chance per stratum
    labels = LabelStore(store)
    dataset_id = labels.dataset_of_run(run_id)
    outside = [i for i in range(ROWS) if i not in {item.row_index for item in items}][:10]
    labels.put(
        dataset_id,
        [
            NewLabel(item.row_index, "hit_rate", "ann", float(truth[item.row_index]))
            for item in items
        ]
        + [NewLabel(i, "hit_rate", "ann", float(truth[i])) for i in outside],
        run_id=run_id,
    )
    picked_mean = float(np.mean([truth[item.row_index] for item in items]))
    assert picked_mean < truth.mean() - 0.2  # half the picks are misses: far below the truth
    found = runs.summary(runs.get(run_id))["hit_rate"]
    low, high = found["calibrated_low"], found["calibrated_high"]
    assert isinstance(low, float) and isinstance(high, float)
    assert low <= truth.mean() <= high
    assert found["labelled"] == 100
    assert "10 labelled rows left out" in str(found["calibrated_note"])
    table = run("agreement", run_id, "--metric", "hit_rate")
    assert table.returncode == 0 and "judge (rows) against ann (columns)" in table.stdout
    view = run("agreement", run_id, "--metric", "hit_rate", "--json")
    assert view.returncode == 0, view.stderr
    metric = json.loads(view.stdout)["metrics"][0]
    assert metric["sampling"] == "inclusion probabilities"
    assert metric["groups"][0]["calibrated_mean"]["weighted"] is True
