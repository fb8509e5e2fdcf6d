"""Two runs row by row over a real ``ragmeter serve``: the pairs of one metric, largest
regression first, paged and filtered in SQL; the scatter of their scores, bounded in size;
rows paired by id (reordered, reworded rows) and by query text (repeated queries pair in
order), as the comparison pairs them; bad parameters answered 4xx naming them."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from ragmeter.reports.record import ResultRecord
from ragmeter.runs.planning.config import EvaluationConfig
from ragmeter.runs.storage.result_columns import column_query
from ragmeter.runs.storage.store import RunStore
from ragmeter.runs.views.compare import compare_scores
from ragmeter.runs.views.pairs import (
    GRID,
    MAX_POINTS,
    choose,
    compare_runs,
    pair_page,
    scatter,
)
from ragmeter.store.db import _MIGRATIONS, Store
from tests.integration.service import ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

RANKS = ["a", "b", "c"]
#: 40 rows with ids: the reference at rank 1, 2 or 3 (mrr 1, 1/2, 1/3)
BASE = [
    {"id": f"r{i}", "query": f"q{i}", "retrieved_ids": RANKS, "reference_ids": [RANKS[i % 3]]}
    for i in range(40)
]


def _candidate_row(row: dict[str, Any], i: int) -> dict[str, Any]:
    """Every fourth row loses its reference (mrr 0); row 39 has none at all (a null)."""
    changed = {**row, "query": f"reworded {row['query']}"}
    if i % 4 == 0:
        changed["reference_ids"] = ["z"]
    if i == 39:
        changed["reference_ids"] = []
    return changed


#: the same rows in reverse order with reworded queries: only the ids pair them
CANDIDATE = [_candidate_row(row, i) for i, row in enumerate(BASE)][::-1]
#: no ids: rows pair by query text, the n-th "dup" with the n-th
PLAIN_BASE = [
    {"query": "dup", "retrieved_ids": RANKS, "reference_ids": ["a"]},
    {"query": "dup", "retrieved_ids": RANKS, "reference_ids": ["b"]},
    {"query": "solo", "retrieved_ids": RANKS, "reference_ids": ["c"]},
]
PLAIN_CANDIDATE = [
    {"query": "solo", "retrieved_ids": RANKS, "reference_ids": ["a"]},
    {"query": "dup", "retrieved_ids": RANKS, "reference_ids": ["c"]},
    {"query": "dup", "retrieved_ids": RANKS, "reference_ids": ["c"]},
    {"query": "only here", "retrieved_ids": RANKS, "reference_ids": ["a"]},
]


def _run(http: httpx.Client, name: str, rows: list[dict[str, Any]], metrics: list[str]) -> str:
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    files = {"file": (f"{name}.jsonl", body, "application/x-ndjson")}
    data(http.post("/datasets", params={"name": name}, files=files), 201)
    request = {"scene_key": "dataset", "datasets_name": name, "evaluate_metrics": metrics}
    run_id: str = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
    assert wait_run(http, run_id)["state"] == "done"
    return run_id


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    store_kind: str,
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    home = tmp_path_factory.mktemp("compare-rows")
    with ServiceProcess(home, keys=None) as server, server.client(None) as http:
        runs = {
            "base": _run(http, "base", BASE, ["mrr", "hit_rate"]),
            "candidate": _run(http, "candidate", CANDIDATE, ["mrr", "hit_rate"]),
            "plain_base": _run(http, "plain-base", PLAIN_BASE, ["mrr"]),
            "plain_candidate": _run(http, "plain-candidate", PLAIN_CANDIDATE, ["mrr"]),
            "precision": _run(http, "precision", BASE, ["precision@2"]),
        }
        yield server, runs


def _get(server: ServiceProcess, path: str, status: int = 200, **params: Any) -> Any:
    with server.client(None) as http:
        response = http.get(path, params=params)
    return data(response, status) if status < 400 else failure(response, status)


def _expected_pairs() -> list[tuple[str, float, float]]:
    """(id, baseline mrr, candidate mrr) of every row, worked out by hand."""
    out = []
    for i in range(40):
        base = 1 / (i % 3 + 1)
        other = 0.0 if i % 4 == 0 else base
        out.append((f"r{i}", base, other))
    return out


def test_pairs_come_largest_regression_first_paged_and_paired_by_id(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, runs = served
    path = f"/evaluate/runs/{runs['base']}/compare/{runs['candidate']}/rows"
    first = _get(server, path, metric="mrr", limit=5)
    assert first["total"] == 40 and first["paired_by"] == "id" and first["limit"] == 5
    # row 39 (index 0 in the reversed candidate) has a null: it comes last
    scored = [(k, b, o) for k, b, o in _expected_pairs() if k != "r39"]
    # most negative first; ties in the candidate's row order (its rows are reversed)
    scored.sort(key=lambda p: (p[2] - p[1], -int(p[0][1:])))
    pages = [first] + [_get(server, path, metric="mrr", offset=o, limit=5) for o in (5, 35)]
    listed = [item for page in pages for item in page["items"]]
    assert [item["key"] for item in listed[:10]] == [k for k, _, _ in scored[:10]]
    assert listed[0] == {
        "key": "r36",
        "base_index": 36,
        "other_index": 3,
        "query": "reworded q36",
        "base_score": 1.0,
        "other_score": 0.0,
        "delta": -1.0,
    }
    last = listed[-1]
    assert (last["key"], last["other_score"], last["delta"]) == ("r39", None, None)
    assert [item["key"] for item in listed[10:14]] == [k for k, _, _ in scored[35:39]]
    for item in listed[:-1]:
        i = int(item["key"][1:])
        assert (item["base_index"], item["other_index"]) == (i, 39 - i)
        assert item["delta"] == pytest.approx(item["other_score"] - item["base_score"])


def test_regressions_only_lists_the_rows_that_got_worse(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, runs = served
    path = f"/evaluate/runs/{runs['base']}/compare/{runs['candidate']}/rows"
    worse = _get(server, path, metric="mrr", regressions_only="true", limit=100)
    assert worse["total"] == 10 == len(worse["items"])
    assert {item["key"] for item in worse["items"]} == {f"r{i}" for i in range(0, 40, 4)}
    assert all(item["delta"] < 0 for item in worse["items"])
    deltas = [item["delta"] for item in worse["items"]]
    assert deltas == sorted(deltas)
    # the comparison agrees: its worse count, and its pairs (the rows both scored)
    compared = {c["metric_name"]: c for c in _get(server, path.removesuffix("/rows"))}
    assert compared["mrr"]["worse"] == 10 and compared["mrr"]["paired"] == 39
    hit = _get(server, path, metric="hit_rate", regressions_only="true", offset=8, limit=5)
    assert hit["total"] == 10 and len(hit["items"]) == 2
    empty = _get(server, path, metric="mrr", regressions_only="true", offset=10)
    assert empty["items"] == [] and empty["total"] == 10


def test_rows_pair_by_query_text_when_a_row_has_no_id_in_order_of_occurrence(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, runs = served
    path = f"/evaluate/runs/{runs['plain_base']}/compare/{runs['plain_candidate']}/rows"
    page = _get(server, path, metric="mrr")
    assert page["paired_by"] == "query" and page["total"] == 3
    pairs = [
        (i["key"], i["base_index"], i["other_index"], round(i["delta"], 6)) for i in page["items"]
    ]
    # base "dup" rows 0 and 1 pair with the candidate's "dup" rows 1 and 2, in order
    assert pairs == [
        ("dup", 0, 1, round(1 / 3 - 1, 6)),
        ("dup", 1, 2, round(1 / 3 - 1 / 2, 6)),
        ("solo", 2, 0, round(1 - 1 / 3, 6)),
    ]
    compared = _get(server, path.removesuffix("/rows"))
    assert compared[0]["paired"] == 3 and compared[0]["paired_by"] == "query"
    assert compared[0]["other_unpaired"] == 1


def test_the_scatter_holds_each_point_with_its_count(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, runs = served
    path = f"/evaluate/runs/{runs['base']}/compare/{runs['candidate']}/scatter"
    found = _get(server, path, metric="mrr")
    assert (found["mode"], found["paired"], found["low"], found["high"]) == ("points", 39, 0, 1)
    counts = {(round(p["x"], 4), round(p["y"], 4)): p["count"] for p in found["points"]}
    expected: dict[tuple[float, float], int] = {}
    for key, base, other in _expected_pairs():
        if key != "r39":
            cell = (round(base, 4), round(other, 4))
            expected[cell] = expected.get(cell, 0) + 1
    assert counts == expected


def test_bad_parameters_are_4xx_naming_them(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, runs = served
    path = f"/evaluate/runs/{runs['base']}/compare/{runs['candidate']}"
    for tail in ("rows", "scatter"):
        assert "metric" in _get(server, f"{path}/{tail}", 422)
        message = _get(server, f"{path}/{tail}", 400, metric="ndcg")
        assert message.startswith("metric: the baseline run has no metric 'ndcg'")
        assert "mrr, hit_rate" in message
    other = f"/evaluate/runs/{runs['base']}/compare/{runs['precision']}/rows"
    message = _get(server, other, 400, metric="mrr")
    assert "the candidate run has no metric 'mrr' (it has precision@2)" in message
    assert "limit" in _get(server, f"{path}/rows", 422, metric="mrr", limit=1001)
    assert "offset" in _get(server, f"{path}/rows", 422, metric="mrr", offset=-1)
    assert "metric" in _get(server, f"{path}/rows", 422, metric="m" * 201)
    assert "regressions_only" in _get(
        server, f"{path}/rows", 422, metric="mrr", regressions_only="maybe"
    )
    assert "no run 'nope'" in _get(
        server, f"/evaluate/runs/{runs['base']}/compare/nope/rows", 404, metric="mrr"
    )


# -- the store directly (SQLite and PostgreSQL): a large scatter, the query plan -------------


def _mrr_run(runs: RunStore, run_id: str, scores: list[float]) -> None:
    """A run of one mrr result per score (row ``i`` has id ``i``), written as a run writes
    them."""
    config = EvaluationConfig(metrics=("mrr",))
    runs.create(config, ["mrr"], runs.dataset("d").id, len(scores), {}, run_id=run_id)
    records = [
        ResultRecord(
            row_index=i,
            metric_name="mrr",
            score=score,
            passing=None,
            feedback=None,
            error=None,
            prediction=None,
            contexts=None,
            prediction_cost=0,
            query=f"q{i}",
            raw_dataset={"id": i, "query": f"q{i}"},
        )
        for i, score in enumerate(scores)
    ]
    runs.commit_rows(run_id, records, {})


def _store_with_runs(url: str, rows: int, seed: int) -> tuple[Store, RunStore]:
    """Two runs (a, b) of ``rows`` rows with random mrr scores."""
    store = Store(url)
    runs = RunStore(store)
    runs.add_dataset([{"query": "q"}], name="d")
    rng = random.Random(seed)
    for run_id in ("a", "b"):
        _mrr_run(runs, run_id, [rng.random() for _ in range(rows)])
    return store, runs


def test_past_max_points_the_scatter_is_a_grid_of_counts(store_url: str) -> None:
    store, _ = _store_with_runs(store_url, MAX_POINTS + 500, seed=3)
    chosen = choose(store, ("a", ["mrr"]), ("b", ["mrr"]), "mrr")
    found = scatter(store, chosen)
    assert found.mode == "grid" and found.grid == GRID and found.paired == MAX_POINTS + 500
    assert 0 < len(found.points) <= GRID * GRID <= MAX_POINTS
    assert sum(p.count for p in found.points) == MAX_POINTS + 500
    assert all(0 < p.x < 1 and 0 < p.y < 1 for p in found.points)
    page = pair_page(store, chosen, regressions_only=False, offset=0, limit=3)
    assert page.paired_by == "id" and page.total == MAX_POINTS + 500
    deltas = [p.delta for p in page.items]
    assert deltas == sorted(deltas) and deltas[0] == min(  # type: ignore[type-var]
        p.delta for p in pair_page(store, chosen, regressions_only=True, offset=0, limit=1000).items
    )


def test_the_pair_query_seeks_the_row_index_and_never_scans_the_results(tmp_path: Path) -> None:
    store, _ = _store_with_runs(f"sqlite:///{tmp_path / 'plan.db'}", 50, seed=1)
    for by in ("id", "query"):
        index = "ix_results_run_metric_row"
        query = column_query("a", "mrr", by)  # type: ignore[arg-type]
        sql = str(query.compile(store.engine, compile_kwargs={"literal_binds": True}))
        with store.engine.connect() as connection:
            plan = [row[3] for row in connection.execute(text(f"EXPLAIN QUERY PLAN {sql}"))]
        assert plan == [f"SEARCH results USING COVERING INDEX {index} (run_id=? AND metric_name=?)"]


def test_results_stored_before_the_pair_keys_get_them_when_the_store_upgrades(
    store_url: str,
) -> None:
    """A store of revision 0006 (results without keys): the upgrade fills them, so its runs
    pair by id where every row has one (a string or an integer), else by query text."""
    url = store_url
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    ids = {"a": ['"x"', "1", '"1"'], "b": ['"1"', "1", '"x"'], "c": ['"x"', "true", "1"]}
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0006")
        connection.execute(text("INSERT INTO datasets (id, source, row_count) VALUES (1, 'x', 3)"))
        for run_id, row_ids in ids.items():
            connection.execute(
                text(
                    "INSERT INTO runs (id, state, scene_key, dataset_id, spec, request, "
                    "total_rows, done_rows, resumable, usage) VALUES (:r, 'done', 'dataset', 1, "
                    """'{"metric_names": ["mrr"]}', '{}', 3, 3, false, '{}')"""
                ),
                {"r": run_id},
            )
            for i, row_id in enumerate(row_ids):
                connection.execute(
                    text(
                        "INSERT INTO results (run_id, row_index, metric_name, score, "
                        "prediction_cost, query, raw_dataset) VALUES (:r, :i, 'mrr', :s, 0, :q, "
                        ":raw)"
                    ),
                    {"r": run_id, "i": i, "s": i / 2, "q": f"q{i}", "raw": f'{{"id": {row_id}}}'},
                )
    engine.dispose()
    store = Store(url)
    by_id = pair_page(
        store, choose(store, ("a", ["mrr"]), ("b", ["mrr"]), "mrr"), regressions_only=False,
        offset=0, limit=10,
    )  # fmt: skip
    # "1" and 1 are different ids: a's rows 0, 1, 2 are b's rows 2, 1, 0
    assert by_id.paired_by == "id"
    assert {(p.key, p.base_index, p.other_index) for p in by_id.items} == {
        ("x", 0, 2), (1, 1, 1), ("1", 2, 0),
    }  # fmt: skip
    # a boolean is no id: run c pairs by query text
    by_query = pair_page(
        store, choose(store, ("a", ["mrr"]), ("c", ["mrr"]), "mrr"), regressions_only=False,
        offset=0, limit=10,
    )  # fmt: skip
    assert by_query.paired_by == "query"
    assert {(p.key, p.base_index, p.other_index) for p in by_query.items} == {
        ("q0", 0, 0), ("q1", 1, 1), ("q2", 2, 2),
    }  # fmt: skip
    store.close()


def _messy_rows(rng: random.Random, count: int, with_ids: bool) -> list[ResultRecord]:
    """Two metrics, repeated queries, some nulls, ids (strings and integers) or none."""
    out = []
    for i in range(count):
        query = f"q{rng.randrange(count // 2)}"
        row: dict[str, Any] = {"query": query}
        if with_ids:
            row["id"] = rng.choice([i, f"r{i}"])
        for metric in ("mrr", "hit_rate"):
            score = None if rng.random() < 0.1 else rng.choice([0.0, 0.5, 1.0, rng.random()])
            out.append(
                ResultRecord(
                    row_index=i,
                    metric_name=metric,
                    score=score,
                    passing=None,
                    feedback=None,
                    error=None if score is not None else "no reference",
                    prediction=None,
                    contexts=None,
                    prediction_cost=0,
                    query=query,
                    raw_dataset=row,
                )
            )
    return out


@pytest.mark.parametrize("with_ids", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stored_runs_compare_exactly_as_their_scores_do(
    store_url: str, seed: int, with_ids: bool
) -> None:
    """The store's comparison (read from the pair index) equals ``compare_scores`` over the
    same results as tuples, with repeated keys, nulls and rows in different orders; and the
    pair page holds the same pairs, largest regression first."""
    store = Store(store_url)
    runs = RunStore(store)
    dataset = runs.add_dataset([{"query": "q"}], name="d")
    rng = random.Random(seed)
    scored: dict[str, list[tuple[Any, ...]]] = {}
    for run_id in ("a", "b"):
        records = _messy_rows(rng, 60, with_ids)
        runs.create(EvaluationConfig(metrics=("mrr", "hit_rate")), ["mrr", "hit_rate"],
                    dataset.id, 60, {}, run_id=run_id)  # fmt: skip
        runs.commit_rows(run_id, records, {})
        scored[run_id] = [
            (r.query, r.metric_name, r.score, (r.raw_dataset or {}).get("id")) for r in records
        ]
    pair = (("a", ["mrr", "hit_rate"]), ("b", ["mrr", "hit_rate"]))
    assert compare_runs(store, *pair) == compare_scores(scored["a"], scored["b"])
    chosen = choose(store, *pair, "mrr")
    assert chosen.by == ("id" if with_ids else "query")
    page = pair_page(store, chosen, regressions_only=False, offset=0, limit=1000)
    deltas = [p.delta for p in page.items if p.delta is not None]
    (mrr, _) = compare_scores(scored["a"], scored["b"])
    assert len(deltas) == mrr.paired and deltas == sorted(deltas)
    assert sum(d < 0 for d in deltas) == mrr.worse


def test_a_run_made_again_under_its_id_is_compared_afresh(store_url: str) -> None:
    """A finished run's columns are kept between requests; a run deleted and made again
    under the same id, or resumed, is read again."""
    store, runs = _store_with_runs(store_url, 30, seed=4)
    for run_id in ("a", "b"):
        runs.start(run_id)
        runs.finish(run_id, "done")
    pair = (("a", ["mrr"]), ("b", ["mrr"]))
    before = compare_runs(store, *pair)
    assert compare_runs(store, *pair) == before
    runs.delete_run("b")
    _mrr_run(runs, "b", [0.0] * 30)
    runs.start("b")
    runs.finish("b", "done")
    (after,) = compare_runs(store, *pair)
    assert after.other_mean == 0.0 and after.other_mean != before[0].other_mean
    page = pair_page(store, choose(store, *pair, "mrr"), regressions_only=False, offset=0, limit=5)
    assert all(p.other_score == 0.0 for p in page.items)
