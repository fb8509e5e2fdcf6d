"""Human labels in a real store (a SQLite file, then a PostgreSQL database): one label per
row, metric and reviewer, kept all or none, checked against the row count and the metric's
scale, found by every run of the dataset version, gone with the dataset."""

from __future__ import annotations

import pytest

from ragmeter.errors import ConfigError, NotFoundError
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.planning.request import EvaluateServeRequest, config_from_request
from ragmeter.runs.storage.labels import MAX_COMMENT, LabelStore, NewLabel
from ragmeter.runs.storage.store import RunStore

pytestmark = pytest.mark.usefixtures("store_home")  # each test on SQLite and on PostgreSQL

ROWS = [{"query": f"q{i}", "response": f"a{i}", "retrieved_contexts": [f"c{i}"]} for i in range(6)]


def _stores() -> tuple[RunStore, LabelStore]:
    kb = KnowledgeBase()
    return RunStore(kb.store), LabelStore(kb.store)


def _run(runs: RunStore, dataset_id: int) -> str:
    request = EvaluateServeRequest(
        scene_key="dataset", evaluate_metrics=["hit_rate"], datasets=ROWS
    )
    return runs.create(config_from_request(request), ["hit_rate"], dataset_id, len(ROWS), {}).id


def test_labels_belong_to_the_dataset_version_and_every_run_of_it(store_url: str) -> None:
    runs, labels = _stores()
    dataset = runs.add_dataset(ROWS)
    first, second = _run(runs, dataset.id), _run(runs, dataset.id)
    kept = labels.put(
        dataset.id,
        [
            NewLabel(0, "faithfulness", "ann", 1.0, "supported"),
            NewLabel(0, "faithfulness", "bob", 0.0),
            NewLabel(3, "AnswerRelevancyMetric", "ann", 4),
        ],
        run_id=first,
    )
    assert kept == 3
    found = labels.of_run(second)  # a re-run of the same version finds them
    assert [(lb.position, lb.metric, lb.reviewer, lb.value) for lb in found] == [
        (0, "faithfulness", "ann", 1.0),
        (0, "faithfulness", "bob", 0.0),
        (3, "AnswerRelevancyMetric", "ann", 4.0),
    ]
    assert found[0].comment == "supported" and found[0].run_id == first
    assert found[0].as_dict()["row_index"] == 0
    # a reviewer's new label of the same row and metric replaces the old one
    labels.put(dataset.id, [NewLabel(0, "faithfulness", "ann", 0.0, "missed a claim")])
    mine = labels.of_run(first, metric="faithfulness", reviewer="ann")
    assert [(lb.value, lb.comment) for lb in mine] == [(0.0, "missed a claim")]
    assert labels.remove(dataset.id, 0, "faithfulness", "bob")
    assert not labels.remove(dataset.id, 0, "faithfulness", "bob")
    assert len(labels.of_dataset(dataset.id)) == 2
    other = runs.add_dataset([*ROWS, {"query": "new", "response": "x"}])
    assert labels.of_dataset(other.id) == []  # another version has its own labels


@pytest.mark.parametrize(
    ("label", "message"),
    [
        (NewLabel(6, "faithfulness", "ann", 1.0), "row 6 is not in the dataset (rows 0 to 5)"),
        (NewLabel(-1, "faithfulness", "ann", 1.0), "row -1 is not in the dataset"),
        (NewLabel(0, "faithfulness", "ann", 1.5), "outside faithfulness's scale 0–1"),
        (NewLabel(0, "AnswerRelevancyMetric", "ann", 6), "outside AnswerRelevancyMetric's"),
        (NewLabel(0, "faithfulness", "ann", float("nan")), "finite number"),
        (NewLabel(0, "", "ann", 1.0), "metric must be 1 to 200"),
        (NewLabel(0, "faithfulness", "x" * 201, 1.0), "reviewer must be 1 to 200"),
        (NewLabel(0, "faithfulness", "ann", 1, "c" * (MAX_COMMENT + 1)), "comment is longer"),
    ],
)
def test_a_bad_label_names_itself_and_keeps_nothing(
    store_url: str, label: NewLabel, message: str
) -> None:
    runs, labels = _stores()
    dataset = runs.add_dataset(ROWS)
    good = NewLabel(1, "faithfulness", "ann", 1.0)
    with pytest.raises(ConfigError) as raised:
        labels.put(dataset.id, [good, label])
    assert str(raised.value).startswith("label 2: ") and message in str(raised.value)
    assert labels.of_dataset(dataset.id) == []  # all or none


def test_labels_go_with_their_dataset(store_url: str) -> None:
    runs, labels = _stores()
    dataset = runs.add_dataset(ROWS, name="qa")
    labels.put(dataset.id, [NewLabel(i, "faithfulness", "ann", i % 2) for i in range(6)])
    assert len(labels.of_dataset(dataset.id, positions=[1, 2, 99])) == 2
    with pytest.raises(NotFoundError, match="no dataset"):
        labels.put(dataset.id + 100, [NewLabel(0, "faithfulness", "ann", 1.0)])
    with pytest.raises(NotFoundError, match="no run 'no-such-run'"):
        labels.of_run("no-such-run")
    runs.delete_dataset("qa")  # no run uses it: its rows and their labels go
    assert labels.of_dataset(dataset.id) == []
