"""Production traces in a real store (SQLite, then PostgreSQL): spans arriving over several
batches with the root last, spans sent twice, scores replaced per trace x metric x rule, the
monitor's reads of a metric over time, retention, and traces saved as a dataset version."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from ragmeter.errors import DatasetError, NotFoundError
from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.storage.traces import TraceFilter, TraceStore
from ragmeter.store.db import Store
from ragmeter.traces.records import SpanRecord, TraceScore

pytestmark = pytest.mark.both_stores

NOW = time.time_ns()
SECOND = 1_000_000_000
DAY = 86_400 * SECOND


def _tid(n: int) -> str:
    return f"{n:032x}"


def _sid(n: int) -> str:
    return f"{n:016x}"


def _span(
    trace: int,
    span: int,
    parent: int | None,
    *,
    start: int = NOW,
    query: str | None = None,
    status: str = "ok",
    service: str = "shop",
) -> SpanRecord:
    attributes: dict[str, object] = {
        "openinference.span.kind": "CHAIN" if parent is None else "LLM"
    }
    if query is not None:
        attributes |= {"input.value": query, "output.value": f"answer to {query}"}
    return SpanRecord(
        trace_id=_tid(trace),
        span_id=_sid(span),
        parent_id=None if parent is None else _sid(parent),
        name="root" if parent is None else f"step {span}",
        kind="CHAIN" if parent is None else "LLM",
        start_ns=start + (span - 1) * SECOND // 10,
        end_ns=start + (span - 1) * SECOND // 10 + SECOND // 20,
        status=status,
        attributes=attributes,
        resource={"service.name": service},
        events=({"name": "token", "time_ns": start, "attributes": {"n": span}},),
    )


@pytest.fixture
def stores(store_url: str) -> Iterator[tuple[TraceStore, RunStore]]:
    store = Store(store_url)
    try:
        yield TraceStore(store), RunStore(store)
    finally:
        store.close()


def test_spans_over_batches_with_the_root_last_make_one_complete_trace(
    stores: tuple[TraceStore, RunStore],
) -> None:
    traces, _ = stores
    # the children first, in two batches; then the root; then a child again (sent twice)
    assert traces.add_spans([_span(1, 2, 1), _span(1, 3, 2)]) == 2
    partial = traces.get(_tid(1)).trace
    assert not partial.record.complete and partial.record.span_count == 2
    assert partial.record.name == "" and not partial.record.row.get("query")
    assert traces.add_spans([_span(1, 4, 1, status="error")]) == 1
    assert traces.add_spans([_span(1, 1, None, query="where is my order?")]) == 1
    assert traces.add_spans([_span(1, 3, 2), _span(1, 3, 2)]) == 0  # duplicates, ignored
    detail = traces.get(_tid(1))
    record = detail.trace.record
    assert record.complete and record.span_count == 4 and record.name == "root"
    assert record.row["query"] == "where is my order?"
    assert record.row["response"] == "answer to where is my order?"
    assert record.status == "error" and record.service == "shop"
    assert record.start_ns == NOW and record.end_ns == NOW + 3 * SECOND // 10 + SECOND // 20
    # the tree: the root, then its children by start, each followed by its own children
    assert [(depth, s.span_id) for depth, s in detail.spans] == [
        (0, _sid(1)),
        (1, _sid(2)),
        (2, _sid(3)),
        (1, _sid(4)),
    ]
    kept = {s.span_id: s for _, s in detail.spans}
    assert kept[_sid(2)].events == ({"name": "token", "time_ns": NOW, "attributes": {"n": 2}},)
    assert kept[_sid(1)].attributes["input.value"] == "where is my order?"
    assert kept[_sid(4)].resource == {"service.name": "shop"}
    assert detail.trace.seq > partial.seq  # every change moves the trace past the cursor


def test_the_cursor_finds_changed_traces_in_order(stores: tuple[TraceStore, RunStore]) -> None:
    traces, _ = stores
    traces.add_spans([_span(1, 1, None, query="a"), _span(2, 1, None, query="b")])
    seen = traces.changed_after(0)
    assert sorted(t.record.trace_id for t in seen) == [_tid(1), _tid(2)]
    cursor = max(t.seq for t in seen)
    assert traces.changed_after(cursor) == []
    traces.add_spans([_span(2, 2, 1)])
    assert [t.record.trace_id for t in traces.changed_after(cursor)] == [_tid(2)]
    traces.add_spans([_span(2, 2, 1)])  # nothing new: no change
    assert len(traces.changed_after(cursor)) == 1


def test_the_cursor_finds_new_traces_after_retention_deleted_every_trace(
    stores: tuple[TraceStore, RunStore],
) -> None:
    """A quiet server: every trace a rule took grows older than keep_days and is deleted. The
    next trace still comes after the rule's cursor (a sequence taken from the traces left
    would start again below it, and the rule would pass over new traces)."""
    traces, _ = stores
    traces.add_spans([_span(n, 1, None, query=f"q{n}", start=NOW - 3 * DAY) for n in (1, 2, 3)])
    cursor = max(t.seq for t in traces.changed_after(0))
    assert traces.purge(1, now_ns=NOW) == 3
    traces.add_spans([_span(4, 1, None, query="after a quiet weekend")])
    assert [t.record.trace_id for t in traces.changed_after(cursor)] == [_tid(4)]


def test_a_trace_keeps_at_most_max_spans_per_trace(store_url: str) -> None:
    """Every span added to a trace sums it up again from all its spans: one span more for a
    trace of 50,000 took the writer 1.8 s. Past ``[online] max_spans_per_trace`` a trace's
    spans are left out (the trace as it is stays)."""
    store = Store(store_url)
    try:
        traces = TraceStore(store, max_spans_per_trace=3)
        assert traces.add_spans([_span(1, n, None if n == 1 else 1) for n in (1, 2)]) == 2
        assert traces.add_spans([_span(1, n, 1) for n in (3, 4, 5)] + [_span(2, 1, None)]) == 2
        assert traces.add_spans([_span(1, 6, 1)]) == 0
        assert traces.get(_tid(1)).trace.record.span_count == 3
        assert [s.span_id for s in traces.spans(_tid(1))] == [_sid(1), _sid(2), _sid(3)]
    finally:
        store.close()


def test_a_list_filters_and_pages(stores: tuple[TraceStore, RunStore]) -> None:
    traces, _ = stores
    traces.add_spans(
        [
            _span(1, 1, None, query="Refund my ORDER", start=NOW - 3 * SECOND),
            _span(2, 1, None, query="track a parcel", start=NOW - 2 * SECOND, service="mail"),
            _span(3, 1, None, query="order 100%_off", start=NOW - SECOND, status="error"),
            _span(4, 5, 9, start=NOW),  # no root yet
        ]
    )
    page, total = traces.list(limit=2)
    assert total == 4 and [t.record.trace_id for t in page] == [_tid(4), _tid(3)]
    page, total = traces.list(offset=2, limit=2)
    assert total == 4 and [t.record.trace_id for t in page] == [_tid(2), _tid(1)]

    def ids(**filters: object) -> list[str]:
        found, total = traces.list(TraceFilter(**filters))  # type: ignore[arg-type]
        assert total == len(found)
        return sorted(t.record.trace_id for t in found)

    assert ids(service="mail") == [_tid(2)]
    assert ids(status="error") == [_tid(3)]
    assert ids(complete=False) == [_tid(4)]
    assert ids(text="order") == [_tid(1), _tid(3)]  # any case
    assert ids(text="100%_") == [_tid(3)]  # LIKE's wildcards are plain characters
    assert ids(text="0%o") == []
    assert ids(since_ns=NOW - 2 * SECOND, until_ns=NOW) == [_tid(2), _tid(3)]
    assert ids(name="root") == [_tid(1), _tid(2), _tid(3)]
    traces.put_scores(
        [
            TraceScore(_tid(1), "faithfulness", 0.2, rule="r1"),
            TraceScore(_tid(2), "faithfulness", 0.9, rule="r1"),
            TraceScore(_tid(3), "answer_relevancy", 0.1, rule="r1"),
        ]
    )
    assert ids(metric="faithfulness", below=0.5) == [_tid(1)]
    assert ids(metric="faithfulness") == [_tid(1), _tid(2)]
    assert ids(below=0.5) == [_tid(1), _tid(3)]
    found, _ = traces.list(TraceFilter(service="shop", complete=True))
    assert {t.record.trace_id: [s.metric for s in t.scores] for t in found} == {
        _tid(1): ["faithfulness"],
        _tid(3): ["answer_relevancy"],
    }
    with pytest.raises(NotFoundError):
        traces.get(_tid(99))


def test_scores_are_replaced_per_trace_metric_and_rule(
    stores: tuple[TraceStore, RunStore],
) -> None:
    traces, _ = stores
    traces.add_spans([_span(1, 1, None, query="q", start=NOW - 10 * SECOND)])
    first = [
        TraceScore(_tid(1), "faithfulness", 0.5, rule="r1", scored_ns=NOW - 5 * SECOND),
        TraceScore(_tid(1), "faithfulness", 0.7, rule="r2", scored_ns=NOW - 4 * SECOND),
        TraceScore(_tid(1), "faithfulness", 0.6, scored_ns=NOW - 3 * SECOND),  # no rule
        TraceScore(_tid(77), "faithfulness", 1.0, rule="r1"),  # a trace not kept: dropped
    ]
    assert traces.put_scores(first) == 3
    again = TraceScore(
        _tid(1),
        "faithfulness",
        None,
        rule="r1",
        reason="judge timed out",
        error_kind="upstream",
        judge_model="m",
        tokens=12,
        scored_ns=NOW - 2 * SECOND,
    )
    assert traces.put_scores([again]) == 1
    scores = traces.get(_tid(1)).trace.scores
    assert sorted((s.rule, s.score) for s in scores if s.rule) == [("r1", None), ("r2", 0.7)]
    assert [s for s in scores if s.rule == "r1"] == [again]
    assert [s.score for s in scores if s.rule is None] == [0.6]
    series = traces.scores("faithfulness")
    assert series.times.tolist() == [NOW - 4 * SECOND, NOW - 3 * SECOND, NOW - 2 * SECOND]
    np.testing.assert_array_equal(series.scores, [0.7, 0.6, np.nan])
    by_rule = traces.scores("faithfulness", rule="r2", since_ns=NOW - 5 * SECOND)
    assert by_rule.scores.tolist() == [0.7]
    by_start = traces.scores("faithfulness", by="start", until_ns=NOW)
    assert by_start.times.tolist() == [NOW - 10 * SECOND] * 3
    assert traces.scores("faithfulness", filters=TraceFilter(service="mail")).times.size == 0
    assert traces.scores("faithfulness", since_ns=NOW).times.size == 0


def test_purge_deletes_old_traces_with_their_spans_and_scores(
    stores: tuple[TraceStore, RunStore],
) -> None:
    traces, _ = stores
    traces.add_spans(
        [_span(n, 1, None, query=f"q{n}", start=NOW - n * DAY) for n in range(1, 6)]
        + [_span(5, 2, 1, start=NOW - 5 * DAY)]
    )
    traces.put_scores([TraceScore(_tid(n), "m", 1.0) for n in range(1, 6)])
    assert traces.purge(2.5, now_ns=NOW) == 3
    assert sorted(t.record.trace_id for t in traces.list()[0]) == [_tid(1), _tid(2)]
    assert traces.spans(_tid(5)) == [] and traces.scores("m").scores.tolist() == [1.0, 1.0]
    assert traces.purge(2.5, now_ns=NOW) == 0
    assert traces.purge(0.5, now_ns=NOW) == 2


def test_traces_become_a_dataset_version(stores: tuple[TraceStore, RunStore]) -> None:
    traces, runs = stores
    traces.add_spans(
        [_span(n, 1, None, query=f"q{n}", start=NOW + n * SECOND) for n in range(1, 4)]
        + [_span(9, 2, 1)]  # no root: no query
    )
    record, new, count = traces.to_dataset(runs, "from-prod", trace_ids=[_tid(2), _tid(1)])
    assert new and count == 2 and record.version == 1 and record.source == "traces"
    rows = runs.dataset_rows("from-prod", 0, 10)
    assert [r["query"] for r in rows] == ["q2", "q1"]
    assert rows[0]["response"] == "answer to q2"
    assert rows[0]["metadata"]["trace_id"] == _tid(2)
    assert rows[0]["metadata"]["service"] == "shop"
    # the same traces again: the version holding them; by filters: a new version
    same, new, _ = traces.to_dataset(runs, "from-prod", trace_ids=[_tid(2), _tid(1)])
    assert not new and (same.id, same.version) == (record.id, 1)
    second, new, count = traces.to_dataset(runs, "from-prod", filters=TraceFilter(complete=True))
    assert new and second.version == 2 and count == 3
    assert [r["query"] for r in runs.dataset_rows("from-prod", 0, 10)] == ["q1", "q2", "q3"]
    assert second.content_hash and second.content_hash != record.content_hash
    with pytest.raises(DatasetError, match=f"trace {_tid(9)}"):
        traces.to_dataset(runs, "bad", trace_ids=[_tid(9)])
    with pytest.raises(NotFoundError, match=_tid(8)):
        traces.to_dataset(runs, "bad", trace_ids=[_tid(1), _tid(8)])
    with pytest.raises(NotFoundError):
        traces.to_dataset(runs, "bad", filters=TraceFilter(service="nobody"))


def test_odd_values_an_exporter_may_send_are_kept(stores: tuple[TraceStore, RunStore]) -> None:
    """NUL characters (PostgreSQL's text holds none: kept as U+FFFD), NaN (as null) and
    names longer than their columns (cut)."""
    traces, _ = stores
    odd = _span(1, 1, None, query="nul\x00here", service="s" * 300)
    odd = replace(
        odd,
        name="n" * 900,
        kind="k" * 90,
        attributes={**odd.attributes, "x": float("nan"), "nul\x00key": "v\x00"},
    )
    assert traces.add_spans([odd]) == 1
    detail = traces.get(_tid(1))
    (_, kept), record = detail.spans[0], detail.trace.record
    assert kept.attributes["x"] is None and len(kept.name) == 500 and len(kept.kind) == 40
    assert record.service == "s" * 200 and len(record.name) == 500
    assert record.row["query"].startswith("nul") and traces.list(TraceFilter(text="nul"))[1] == 1
