"""The metric registry: names, aliases, specs, decorators and entry points."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragmeter
from ragmeter.errors import LimitError, MetricError, NotFoundError
from ragmeter.metrics import (
    BaseEvaluationResult,
    RetrieverEvaluationMetric,
    RetrieverMRRMetric,
    create_metric,
    metric_entries,
    parse_metric_spec,
    register_metric,
    registry,
)
from ragmeter.metrics.registry import (
    ENTRY_POINT_GROUP,
    MetricSpec,
    UnknownMetricError,
    first_sentence,
)


@pytest.fixture
def clean_registry() -> Iterator[list[str]]:
    added: list[str] = []
    yield added
    for name in added:
        registry.remove("metric", name)


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("ndcg@10", MetricSpec("ndcg", (), 10)),
        ("RetrieverMRRMetric", MetricSpec("RetrieverMRRMetric")),
        ("mrr(match=overlap,threshold=0.7)@5", MetricSpec("mrr", (("match", "overlap"), ("threshold", 0.7)), 5)),
        ("retrieval_similarity(reduce=first)", MetricSpec("retrieval_similarity", (("reduce", "first"),))),
        (" P @ 3 ", MetricSpec("P", (), 3)),
        ("x(at=a@b)@2", MetricSpec("x", (("at", "a@b"),), 2)),  # '@' in a value is the value's
        ("x(at=a@b)", MetricSpec("x", (("at", "a@b"),))),
    ],
)  # fmt: skip
def test_specs_parse_and_round_trip(text: str, spec: MetricSpec) -> None:
    assert parse_metric_spec(text) == spec
    assert parse_metric_spec(str(spec)) == spec


@pytest.mark.parametrize(
    "text",
    ["ndcg@", "ndcg@0", "nd cg", "mrr(match)", "__import__('os')", "mrr@@3", "mrr(a=(b))",
     "mrr(a=b", "mrr)(", "a@b@3", "mrr@1.5", "mrr@-3", "mrr@²", "mrr@" + "9" * 150],
)  # fmt: skip
def test_bad_specs(text: str) -> None:
    with pytest.raises(MetricError):
        create_metric(text)


def test_specs_are_capped_as_written_and_as_stored() -> None:
    with pytest.raises(LimitError, match="at most 200 characters"):
        parse_metric_spec("mrr(match=a" + " " * 40_000 + "b)")
    grows = "AnswerRelevancyMetric(" + ",".join(["passing_score=1e9"] * 9) + ")"
    assert len(grows) <= 200 and parse_metric_spec(grows)  # 1e9 is stored as 1000000000.0
    with pytest.raises(LimitError, match="as stored"):
        create_metric(grows)


@pytest.mark.parametrize("key", ["judge", "embedder"])
def test_object_parameters_are_refused_naming_them(key: str) -> None:
    with pytest.raises(MetricError, match=f"parameter '{key}' takes an object"):
        create_metric(f"AnswerRelevancyMetric({key}=x)")


@pytest.mark.parametrize(
    ("request_name", "shown", "cls"),
    [
        ("RetrieverMRRMetric", "RetrieverMRRMetric", "RetrieverMRRMetric"),
        ("retrievermrrmetric", "RetrieverMRRMetric", "RetrieverMRRMetric"),
        ("mrr", "mrr", "RetrieverMRRMetric"),
        ("RR@10", "mrr@10", "RetrieverMRRMetric"),
        ("P@5", "precision@5", "RetrieverPrecisionMetric"),
        ("success@3", "hit_rate@3", "RetrieverHitRateMetric"),
        ("AP@100", "map@100", "RetrieverMAPMetric"),
        ("nDCG@10", "ndcg@10", "RetrieverNDCGMetric"),
        ("RetrieverSimilarityMetric", "RetrieverSimilarityMetric", "RetrieverSimilarityMetric"),
    ],
)
def test_names_resolve(request_name: str, shown: str, cls: str) -> None:
    metric = create_metric(request_name)
    assert metric.metric_name == shown
    assert metric.name() == cls == type(metric).__name__


def test_default_top_k_changes_the_cut_not_the_name() -> None:
    """One rule: the name is the spec as written (aliases canonicalised); ``@k`` only when
    written. A default cut-off applies to metrics without their own ``@k``."""
    plain = create_metric("ndcg", top_k=5)
    assert (plain.metric_name, plain.top_k) == ("ndcg", 5)
    alias = create_metric("RR", top_k=5)
    assert (alias.metric_name, alias.top_k) == ("mrr", 5)
    own = create_metric("ndcg@3", top_k=5)
    assert (own.metric_name, own.top_k) == ("ndcg@3", 3)
    by_class = create_metric("RetrieverMRRMetric", top_k=5)
    assert (by_class.metric_name, by_class.top_k) == ("RetrieverMRRMetric", 5)
    param = create_metric("mrr(top_k=2)", top_k=5)
    assert (param.metric_name, param.top_k) == ("mrr(top_k=2)", 2)
    assert create_metric("ndcg").top_k is None  # no cut-off: the whole list


def test_readme_first_example_names() -> None:
    """docs/how-to/evaluate-rag-app.md: ``evaluate(..., metrics=["mrr", "ndcg@10", ...], top_k=10)`` then
    ``report.scores("mrr")``."""
    rows = [{"query": "q", "retrieved_ids": ["a", "b"], "reference_ids": ["b"]}]
    report = ragmeter.evaluate(rows, ["mrr", "ndcg@10", "P"], top_k=1)
    assert report.metric_names == ["mrr", "ndcg@10", "precision"]
    assert report.scores("mrr") == [0.0]  # cut at 1: b is at rank 2
    assert report.scores("ndcg@10")[0] == pytest.approx(1 / math.log2(3))


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(UnknownMetricError) as info:
        create_metric("ndgc@10")
    message = str(info.value)
    assert "unknown metric 'ndgc'" in message
    assert "Did you mean 'ndcg'" in message
    for known in ("hit_rate", "mrr", "ndcg", "map", "precision", "recall", "retrieval_similarity"):
        assert known in message
    assert isinstance(info.value, NotFoundError)
    assert isinstance(info.value, KeyError)


def test_bad_parameters_are_metric_errors() -> None:
    with pytest.raises(MetricError, match="match must be one of"):
        create_metric("mrr(match=fuzzy)")
    with pytest.raises(MetricError, match="unexpected keyword"):
        create_metric("mrr(colour=red)")


def test_decorator_registration(clean_registry: list[str]) -> None:
    @register_metric("first_is_relevant", aliases=("fir",))
    class FirstIsRelevant(RetrieverEvaluationMetric):
        """1 if the first retrieved chunk is a reference context."""

        def sync_compute(self, prediction, contexts=None, query=None):  # type: ignore[no-untyped-def]
            return BaseEvaluationResult(
                score=float(bool(prediction) and prediction[0] in (contexts or []))
            )

    clean_registry.append("first_is_relevant")
    assert create_metric("fir").metric_name == "first_is_relevant"
    assert create_metric("FirstIsRelevant").metric_name == "FirstIsRelevant"
    entry = next(e for e in metric_entries() if e.name == "first_is_relevant")
    assert entry.description == "1 if the first retrieved chunk is a reference context."
    rows = [{"query": "q", "contexts": ["a", "b"], "factual": ["a"]}]
    assert ragmeter.evaluate(rows, ["first_is_relevant"]).scores("first_is_relevant") == [1.0]

    with pytest.raises(MetricError, match="already registered"):
        register_metric("mrr")(FirstIsRelevant)


def test_entry_point_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_registry: list[str]
) -> None:
    """A metric from another installed distribution, found through the entry point group."""
    (tmp_path / "acme_metrics.py").write_text(
        textwrap.dedent(
            '''
            from ragmeter.metrics import BaseEvaluationResult, RetrieverEvaluationMetric

            class RetrievedCount(RetrieverEvaluationMetric):
                """Number of retrieved chunks."""

                def sync_compute(self, prediction, contexts=None, query=None):
                    return BaseEvaluationResult(score=float(len(prediction)))
            '''
        )
    )
    dist = tmp_path / "acme_metrics-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-metrics\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nretrieved_count = acme_metrics:RetrievedCount\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._loaded_groups.discard(ENTRY_POINT_GROUP)
    clean_registry.append("retrieved_count")

    assert "retrieved_count" in {e.name for e in metric_entries()}
    rows = [{"query": "q", "contexts": ["a", "b", "c"], "factual": ["a"]}]
    report = ragmeter.evaluate(rows, ["retrieved_count"], top_k=2)
    assert report.scores("retrieved_count") == [2.0]


def test_every_builtin_has_a_description() -> None:
    entries = {e.name: e for e in metric_entries()}
    for name in ("hit_rate", "mrr", "precision", "recall", "ndcg", "map", "retrieval_similarity"):
        assert entries[name].description
        assert entries[name].takes_k
    assert entries["mrr"].class_name == RetrieverMRRMetric.__name__


def test_descriptions_are_whole_first_sentences() -> None:
    """``ragmeter metrics`` shows the first sentence of each description, its wrapped lines
    joined, never a sentence cut at a line end."""
    entries = {e.name: e for e in metric_entries()}
    assert entries["faithfulness"].description == (
        "Faithfulness = supported response statements / response statements, each statement "
        "checked against the retrieved contexts."
    )
    assert entries["context_precision"].description.endswith("when the row has no reference).")
    assert entries["AnswerRelevancyMetric"].description.endswith("the rest the feedback.")
    for entry in entries.values():
        assert entry.description.endswith((".", ")")), entry.name
        assert "\n" not in entry.description and "``" not in entry.description


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("One line.", "One line."),
        ("Wrapped over\ntwo lines. Second sentence.", "Wrapped over two lines."),
        ("Ends at 0.5 (e.g. here) and goes on. Next.", "Ends at 0.5 (e.g. here) and goes on."),
        ("No full stop\n\nSecond paragraph.", "No full stop"),
        ("中文描述。第二句。", "中文描述。"),
        ("Quotes ``code``. More.", "Quotes code."),
    ],
)
def test_first_sentence(text: str, first: str) -> None:
    assert first_sentence(text) == first
