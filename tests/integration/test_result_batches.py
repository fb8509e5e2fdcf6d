"""A run's results of a metric read as one column whatever way they were stored: plain
results in columnar batches (``result_batches``), the others one row each in ``results``.
Random splits of random results (Hypothesis) on a real SQLite file and PostgreSQL database:
the column, the finished rows and whether every row has an id equal what the results say."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, null, select, update

from ragmeter.config import load_settings
from ragmeter.reports.record import ResultRecord
from ragmeter.runs.planning.config import EvaluationConfig
from ragmeter.runs.storage.result_batches import batch_values, insert_batches
from ragmeter.runs.storage.result_columns import finished_rows, has_row_ids, score_column
from ragmeter.runs.storage.store import RunStore
from ragmeter.store.db import Store
from ragmeter.store.models import ResultBatch, ResultRow
from ragmeter.store.pairing import keys_of

pytestmark = pytest.mark.both_stores

_ids = itertools.count()


@pytest.fixture
def runs(store_url: str) -> Iterator[RunStore]:
    store = Store(store_url)
    found = RunStore(store)
    found.add_dataset([{"query": "q"}], name="d")
    yield found
    store.engine.dispose()


#: one result: (score or None, the row has an id, plain: stored in a batch)
_result = st.tuples(
    st.one_of(st.none(), st.floats(0, 1, allow_nan=False)), st.booleans(), st.booleans()
)


def _record(row: int, score: float | None, with_id: bool) -> ResultRecord:
    raw = {"query": f"q{row}", **({"id": f"r{row}"} if with_id else {})}
    return ResultRecord(
        row_index=row,
        metric_name="mrr",
        score=score,
        passing=None,
        feedback=None,
        error=None if score is not None else "no relevant id",
        prediction=None,
        contexts=None,
        prediction_cost=0,
        query=f"q{row}",
        raw_dataset=raw,
    )


def _store_batches(
    runs: RunStore, run_id: str, rows: list[int], scores: list[float], ids: list[bool], cut: int
) -> None:
    """Plain results of ``mrr`` for ``rows`` (ascending) in batches of ``cut`` rows; a row
    with ``ids[i]`` has the id ``r<row>``."""
    id_keys, query_keys = keys_of(
        [f"q{r}" for r in rows],
        [f"r{r}" if has else None for r, has in zip(rows, ids, strict=True)],
    )
    parts = [slice(at, at + cut) for at in range(0, len(rows), cut)]
    values = [
        batch_values(run_id, "mrr", rows[p], scores[p], id_keys[p], query_keys[p]) for p in parts
    ]
    with runs.store.session() as session:
        insert_batches(session, values)
        session.commit()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(results=st.lists(_result, min_size=1, max_size=40), cut=st.integers(1, 8))
def test_a_column_is_the_union_of_batches_and_rows_in_row_order(
    runs: RunStore, results: list[tuple[float | None, bool, bool]], cut: int
) -> None:
    run_id = f"batches-{next(_ids)}"
    runs.create(
        EvaluationConfig(metrics=("mrr",)),
        ["mrr"],
        runs.dataset("d").id,
        len(results),
        {},
        run_id=run_id,
    )
    # a null score always has its reason, so it is never plain
    plain = [i for i, (score, _, batched) in enumerate(results) if batched and score is not None]
    rows = [_record(i, s, w) for i, (s, w, _) in enumerate(results) if i not in set(plain)]
    if rows:
        runs.commit_rows(run_id, rows, {})
    scores = [results[i][0] or 0.0 for i in plain]
    _store_batches(runs, run_id, plain, scores, [results[i][1] for i in plain], cut)
    with runs.store.session() as session:
        column = score_column(session, run_id, "mrr", keys="id")
        by_query = score_column(session, run_id, "mrr", keys="query")
        finished = finished_rows(session, run_id)
        every_id = has_row_ids(session, run_id, ["mrr"])
    expected = np.array([np.nan if s is None else s for s, _, _ in results])
    assert column.rows.tolist() == list(range(len(results)))
    np.testing.assert_array_equal(column.scores, expected)
    all_ids, all_queries = keys_of(
        [f"q{i}" for i in range(len(results))],
        [f"r{i}" if w else None for i, (_, w, _) in enumerate(results)],
    )
    assert column.keys is not None and by_query.keys is not None
    assert column.keys.tolist() == [k or 0 for k in all_ids]
    assert by_query.keys.tolist() == list(all_queries)
    assert finished == set(range(len(results)))
    assert every_id == all(w for _, w, _ in results)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    stored=st.dictionaries(st.integers(0, 60), st.booleans(), min_size=1, max_size=30),
    cut=st.integers(1, 8),
)
def test_a_rows_neighbours_are_the_nearest_stored_rows_of_batches_and_rows(
    runs: RunStore, stored: dict[int, bool], cut: int
) -> None:
    """Rows stored with gaps, some in batches (``stored[row]`` true), some as rows: the rows
    before and after any row are the nearest stored ones, read from either."""
    from ragmeter.runs.storage.result_store import neighbours

    run_id = f"gaps-{next(_ids)}"
    runs.create(EvaluationConfig(metrics=("mrr",)), ["mrr"], runs.dataset("d").id, 61, {},
                run_id=run_id)  # fmt: skip
    batched = sorted(r for r, b in stored.items() if b)
    rows = [_record(r, 0.5, False) for r, b in stored.items() if not b]
    if rows:
        runs.commit_rows(run_id, rows, {})
    _store_batches(runs, run_id, batched, [0.5] * len(batched), [False] * len(batched), cut)
    every = sorted(stored)
    with runs.store.session() as session:
        for row in range(-1, 63):
            lower = [r for r in every if r < row]
            upper = [r for r in every if r > row]
            expected = (lower[-1] if lower else None, upper[0] if upper else None)
            assert neighbours(session, run_id, row) == expected, row


# -- every reader, before and after a run's plain results move into batches --------------

N = 14


def _rows() -> list[dict[str, object]]:
    """Retrieval rows, some without an id, some without a relevant id (a null with its
    reason: a row of ``results`` beside the batches)."""
    rows: list[dict[str, object]] = []
    for i in range(N):
        retrieved = [f"d{i}-{k}" for k in range(2)]
        row: dict[str, object] = {
            "query": f"How does part {i} of the workflow run?",
            "retrieved_ids": retrieved,
            "reference_ids": [] if i % 5 == 4 else [retrieved[i % 2]],
        }
        if i % 4:
            row["id"] = f"row-{i}"
        rows.append(row)
    return rows


def _read_all(runs: RunStore, run_id: str) -> dict[str, object]:
    from ragmeter.runs.storage.result_store import (
        light_records,
        neighbours,
        null_reasons,
        row_records,
        row_texts,
        stored_rows,
        verdicts,
        worst_records,
    )

    runs._summaries.clear()  # the summary is computed afresh from the store
    record = runs.get(run_id)
    ds = record.dataset_id
    out: dict[str, object] = {}
    with runs.store.session() as s:
        out["row_records"] = row_records(s, run_id, ds, range(N))
        out["row_records_some"] = row_records(s, run_id, ds, [1, 5, 7, 12], ["mrr"])
        out["light"] = light_records(s, run_id, ds)
        for metric in METRICS:
            out[f"worst {metric}"] = worst_records(s, run_id, ds, metric, 6)
            out[f"texts {metric}"] = row_texts(s, run_id, ds, metric, 12)
            out[f"verdicts {metric}"] = verdicts(s, run_id, metric)
            out[f"nulls {metric}"] = null_reasons(s, run_id, metric, 10)
            for keys in (None, "id", "query"):
                column = score_column(s, run_id, metric, keys=keys)  # type: ignore[arg-type]
                out[f"column {metric} {keys}"] = (
                    column.rows.tolist(),
                    [None if x != x else x for x in column.scores.tolist()],  # NaN: null
                    None if column.keys is None else column.keys.tolist(),
                )
        out["texts some"] = row_texts(s, run_id, ds, "mrr", 40, rows=[0, 3, 9])
        out["neighbours"] = [neighbours(s, run_id, i) for i in (0, 1, 6, N - 1, N + 3)]
        out["stored"] = stored_rows(s, run_id)
        out["finished"] = finished_rows(s, run_id)
        out["ids"] = has_row_ids(s, run_id, ["mrr", "hit_rate"])
    for offset, limit in ((0, 5), (3, 11), (20, 9), (40, 10), (0, 10**9)):
        out[f"results {offset} {limit}"] = runs.results(run_id, offset, limit)
    # cut by what its texts take: a plain result's inputs are its row's, counted once
    sized, total = runs.results(run_id, 2, 30, max_bytes=400)
    page, _ = runs.results(run_id, 2, 30)
    assert sized and sized == page[: len(sized)] and len(sized) < len(page)
    out["results by size: total"] = total
    out["iter"] = list(runs.iter_results(run_id, rows=4))
    out.update(_pages(runs, run_id))
    out["summary"] = runs.summary(runs.get(run_id))
    return out


#: the run's metrics; precision@1 is given each row's ranked ids cut to 1 (of 2)
METRICS = ["mrr", "hit_rate", "precision", "precision@1"]

FILTERS = [
    {},
    {"metric": "hit_rate", "sort": "score", "order": "desc"},
    {"metric": "mrr", "below": 0.9},
    {"failures_first": True},
    {"metric": "hit_rate", "failures_first": True, "sort": "score"},
    {"metric": "precision", "sort": "score", "order": "asc", "failures_first": True},
    {"metric": "precision@1", "sort": "score", "order": "desc"},
    {"text": "part 1"},  # the query (rows 1, 10 to 13)
    {"text": "d3-1"},  # the answer (a retriever's ids)
    {"text": "ow"},  # too short for a trigram
    {"text": "PART 12", "metric": "mrr", "sort": "score"},
]


def _pages(runs: RunStore, run_id: str) -> dict[str, object]:
    """The row table's pages (filtered, searched, sorted) as the dashboard reads them."""
    from ragmeter.runs.views.browse import RowFilter, row_page

    out: dict[str, object] = {}
    for asked in FILTERS:
        chosen = RowFilter.model_validate(asked)
        for offset, limit in ((0, 50), (3, 4)):
            found, total = row_page(runs.store, run_id, METRICS, chosen, offset, limit)
            out[f"page {asked} {offset}"] = (found, total)
    return out


def test_every_reader_reads_a_run_stored_in_batches_as_one_stored_as_rows(home: Path) -> None:
    """The same results three ways: stored by a run (plain ones in batches), stored one row
    each (as runs were before batches), and those rows moved into batches (``batch_plain``,
    as an older run is): every reader reads the three alike."""
    import ragmeter
    from ragmeter.runs.storage.result_batches import batch_plain

    metrics = METRICS
    report = ragmeter.evaluate(_rows(), ",".join(metrics), store="mix")
    runs = RunStore(Store(load_settings().store_url()))  # the store evaluate() used
    batched = _read_all(runs, report.run_id)
    record = runs.get(report.run_id)
    runs.create(
        EvaluationConfig(metrics=tuple(metrics)), metrics, record.dataset_id, N, {}, run_id="rows"
    )
    runs.commit_rows("rows", ragmeter.evaluate(_rows(), ",".join(metrics)).results(), {})
    with runs.store.session() as session:  # as runs stored them before batches: each
        session.execute(  # result's row read from the dataset, not copied
            update(ResultRow).where(ResultRow.run_id == "rows").values(raw_dataset=null())
        )
        session.commit()
    with runs.store.session() as session:
        batches = session.scalar(select(func.count()).select_from(ResultBatch))
        assert batches == len(metrics)  # the run's: one per metric (its rows in one batch)
        assert score_column(session, "rows", "mrr").rows.tolist() == list(range(N))
    as_rows = _read_all(runs, "rows")
    with runs.store.session() as session:
        moved = batch_plain(session, "rows", rows=3)
        session.commit()
    # the rows with a relevant id: a score and nothing more, of each metric given whole
    # lists (a cut list is no field of the row: precision@1's stay rows)
    assert moved == (len(metrics) - 1) * sum(1 for i in range(N) if i % 5 != 4)
    moved_in = _read_all(runs, "rows")
    assert batched.keys() == as_rows.keys() == moved_in.keys()
    for name in batched:
        assert as_rows[name] == batched[name], name
        assert moved_in[name] == batched[name], name
    searched = batched["page {'text': 'part 1'} 0"]
    assert [r.row_index for r in searched[0]] == [1, 10, 11, 12, 13]  # type: ignore[index]


def test_results_scored_on_texts_are_batched_with_the_text_fields(home: Path) -> None:
    """Rows that carry ranked ids but are judged on texts (no relevant ids): a ranking
    metric is given the texts, and its plain results name the text fields of their rows."""
    import ragmeter

    rows = [
        {
            "query": f"q{i}",
            "retrieved_ids": ["a", "b"],
            "retrieved_contexts": [f"x{i}", "y"],
            "reference_contexts": ["y"],
        }
        for i in range(6)
    ]
    report = ragmeter.evaluate(rows, "hit_rate,mrr@1", store="texts")
    runs = RunStore(Store(load_settings().store_url()))
    with runs.store.session() as session:
        found = session.execute(
            select(ResultBatch.metric_name, ResultBatch.prediction_field, ResultBatch.size)
            .where(ResultBatch.run_id == report.run_id)
            .order_by(ResultBatch.metric_name)
        ).all()
        as_rows = session.scalar(
            select(func.count()).select_from(ResultRow).where(ResultRow.run_id == report.run_id)
        )
    assert [tuple(f) for f in found] == [
        ("hit_rate", "retrieved_contexts", 6),
        ("mrr@1", "retrieved_contexts[:1]", 6),
    ]
    assert as_rows == 0
    stored = runs.results(report.run_id, 0, 100)[0]
    assert [(r.metric_name, r.prediction, r.contexts) for r in stored[:2]] == [
        ("hit_rate", ["x0", "y"], ["y"]),
        ("mrr@1", ["x0"], ["y"]),
    ]


def test_every_kind_of_ranking_row_reads_back_what_its_metric_was_given(home: Path) -> None:
    """Rows matched by id, by text, by both, graded, with a list shorter or longer than a
    metric's depth, or empty: each stored result (plain in a batch, or a row) reads back the
    score, prediction and contexts the evaluation gave it."""
    import ragmeter

    rows: list[dict[str, object]] = [
        {"query": "ids", "retrieved_ids": ["a", "b", "c"], "reference_ids": ["b"]},
        {"query": "short", "retrieved_ids": ["a"], "reference_ids": ["a"]},
        {"query": "graded", "retrieved_ids": ["a", "b", "c"], "reference_relevance": {"c": 2}},
        {"query": "texts", "retrieved_contexts": ["x", "y", "z"], "reference_contexts": ["z"]},
        {
            "query": "both",
            "retrieved_ids": ["a", "b"],
            "retrieved_contexts": ["x", "y"],
            "reference_contexts": ["y"],
        },
        {"query": "nothing retrieved", "retrieved_ids": [], "reference_ids": ["a"]},
        {"query": "no relevant", "retrieved_ids": ["a", "b", "c"], "reference_ids": []},
    ]
    metrics = "mrr@2,precision@2,hit_rate,ndcg@5"
    given = ragmeter.evaluate(rows, metrics).results()
    report = ragmeter.evaluate(rows, metrics, store="kinds")
    runs = RunStore(Store(load_settings().store_url()))
    stored = runs.results(report.run_id, 0, 1000)[0]

    def seen(records: list[ResultRecord]) -> list[tuple[object, ...]]:
        return sorted(
            (r.row_index, r.metric_name, r.score, r.error, r.prediction, r.contexts)
            for r in records
        )

    assert seen(stored) == seen(given)
    with runs.store.session() as session:
        batched = session.scalar(
            select(func.sum(ResultBatch.size)).where(ResultBatch.run_id == report.run_id)
        )
    # plain: at least the two rows given texts, under each metric (a batch names one field:
    # in a run mixing texts and ids, the rows given ids are rows of results beside it)
    assert batched is not None and batched >= 8
