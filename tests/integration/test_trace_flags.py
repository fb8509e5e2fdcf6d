"""Reviewers' flags on production traces in a real store (SQLite, then PostgreSQL): flag,
re-flag (replaced), unflag, a list filtered by flags, flagged traces saved as a dataset
version of exactly those rows, and flags deleted with their trace by retention."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragmeter.errors import ConfigError, NotFoundError
from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.storage.trace_flags import MAX_FLAG_NOTE, TraceFlagStore
from ragmeter.runs.storage.traces import TraceFilter, TraceStore
from ragmeter.store.db import Store
from ragmeter.traces.records import TraceScore
from tests.integration.test_trace_store import DAY, NOW, SECOND, _span, _tid

pytestmark = pytest.mark.both_stores


@pytest.fixture
def stores(store_url: str) -> Iterator[tuple[TraceStore, TraceFlagStore, RunStore]]:
    store = Store(store_url)
    try:
        traces = TraceStore(store)
        traces.add_spans(
            [_span(n, 1, None, query=f"q{n}", start=NOW + n * SECOND) for n in range(1, 6)]
        )
        yield traces, TraceFlagStore(store), RunStore(store)
    finally:
        store.close()


def _ids(traces: TraceStore, **filters: object) -> list[str]:
    found, total = traces.list(TraceFilter(**filters))  # type: ignore[arg-type]
    assert total == len(found)
    return sorted(t.record.trace_id for t in found)


def test_a_flag_is_kept_replaced_and_removed(
    stores: tuple[TraceStore, TraceFlagStore, RunStore],
) -> None:
    _, flags, _ = stores
    kept = flags.put(_tid(1), "rita", "wrong", "cites the old price list")
    assert (kept.user, kept.label, kept.note) == ("rita", "wrong", "cites the old price list")
    flags.put(_tid(1), "max", "needs_review")
    # rita flags it again: hers is replaced, max's stays
    flags.put(_tid(1), "rita", "good_example", "")
    found = flags.of_trace(_tid(1))
    assert sorted((f.user, f.label, f.note) for f in found) == [
        ("max", "needs_review", None),
        ("rita", "good_example", None),
    ]
    assert found[-1].user == "rita"  # oldest first: hers is the newer one now
    assert flags.of_traces([_tid(1), _tid(2)]).keys() == {_tid(1)}
    assert flags.remove(_tid(1), "rita") is True
    assert flags.remove(_tid(1), "rita") is False
    assert [f.user for f in flags.of_trace(_tid(1))] == ["max"]


def test_a_flag_needs_a_kept_trace_a_known_label_and_a_short_note(
    stores: tuple[TraceStore, TraceFlagStore, RunStore],
) -> None:
    _, flags, _ = stores
    with pytest.raises(NotFoundError, match=_tid(99)):
        flags.put(_tid(99), "rita", "wrong")
    with pytest.raises(NotFoundError, match=_tid(99)):
        flags.remove(_tid(99), "rita")
    with pytest.raises(ConfigError, match="one of wrong, good_example"):
        flags.put(_tid(1), "rita", "bad")
    with pytest.raises(ConfigError, match=f"at most {MAX_FLAG_NOTE}"):
        flags.put(_tid(1), "rita", "wrong", "x" * (MAX_FLAG_NOTE + 1))
    assert flags.of_trace(_tid(1)) == []
    flags.put(_tid(1), "rita", "wrong", "x" * MAX_FLAG_NOTE)
    assert len(flags.of_trace(_tid(1))[0].note or "") == MAX_FLAG_NOTE


def test_the_list_filters_by_flags(stores: tuple[TraceStore, TraceFlagStore, RunStore]) -> None:
    traces, flags, _ = stores
    flags.put(_tid(1), "rita", "wrong")
    flags.put(_tid(1), "max", "wrong")  # two flags: the trace once
    flags.put(_tid(3), "rita", "good_example")
    flags.put(_tid(4), "max", "needs_review")
    assert _ids(traces, flagged=True) == [_tid(1), _tid(3), _tid(4)]
    assert _ids(traces, flagged=False) == [_tid(2), _tid(5)]
    assert _ids(traces, flag="wrong") == [_tid(1)]
    assert _ids(traces, flag="wrong", flagged=False) == []
    traces.put_scores([TraceScore(_tid(n), "faithfulness", n / 10) for n in range(1, 6)])
    assert _ids(traces, flagged=True, metric="faithfulness", below=0.35) == [_tid(1), _tid(3)]
    flags.remove(_tid(4), "max")
    assert _ids(traces, flagged=True) == [_tid(1), _tid(3)]


def test_flagged_traces_become_a_dataset_version_of_exactly_those_rows(
    stores: tuple[TraceStore, TraceFlagStore, RunStore],
) -> None:
    traces, flags, runs = stores
    first, _, _ = traces.to_dataset(runs, "flagged", filters=TraceFilter())
    assert first.version == 1
    for n in (4, 2):
        flags.put(_tid(n), "rita", "wrong")
    record, new, count = traces.to_dataset(runs, "flagged", filters=TraceFilter(flagged=True))
    assert new and record.version == 2 and count == 2
    rows = runs.dataset_rows("flagged", 0, 10)
    assert [(r["query"], r["metadata"]["trace_id"]) for r in rows] == [
        ("q2", _tid(2)),
        ("q4", _tid(4)),
    ]
    flags.put(_tid(5), "max", "good_example")
    wrong, new, count = traces.to_dataset(runs, "flagged", filters=TraceFilter(flag="wrong"))
    assert not new and (wrong.id, count) == (record.id, 2)  # the same rows: that version
    good, new, count = traces.to_dataset(runs, "flagged", filters=TraceFilter(flagged=True))
    assert new and good.version == 3 and count == 3


def test_retention_deletes_a_trace_with_its_flags(store_url: str) -> None:
    store = Store(store_url)
    try:
        traces, flags = TraceStore(store), TraceFlagStore(store)
        traces.add_spans([_span(n, 1, None, query=f"q{n}", start=NOW - n * DAY) for n in (1, 3)])
        for n in (1, 3):
            flags.put(_tid(n), "rita", "wrong")
        assert traces.purge(2, now_ns=NOW) == 1
        assert flags.of_traces([_tid(1), _tid(3)]).keys() == {_tid(1)}
        assert _ids(traces, flagged=True) == [_tid(1)]
        # the trace arrives again (a late span): it comes back without the old flag
        traces.add_spans([_span(3, 1, None, query="q3", start=NOW)])
        assert flags.of_trace(_tid(3)) == []
    finally:
        store.close()
