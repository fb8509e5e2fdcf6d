"""trec_eval's own test cases (its quicktest: qrels, runs and expected outputs, read from
``shared/peer_suites/trec_eval``) through every way in: ``ragmeter eval --qrels --run
--format trec`` as a process, ``ragmeter.evaluate_trec``, the batch API
(``ragmeter.metrics.score_rankings`` over the rankings and grades) and the service's TREC
dataset format. Each must print what trec_eval prints, line for line, for every measure ragmeter
offers; a difference fails naming the file, measure and query unless
docs/peer-differences.md lists it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import ragmeter
from ragmeter.client import Client
from ragmeter.datasets.trec import read_qrels, read_run
from ragmeter.datasets.trec_rows import trec_rows
from ragmeter.metrics import create_metric, score_rankings
from ragmeter.metrics.retrieval.trec import expand_measures
from ragmeter.runs.views.trec_table import format_trec, trec_values
from tests.integration.helpers import run
from tests.integration.service import KEY, ServiceProcess
from tests.peer_suites._trec import CASES, TrecCase, differences, trec_eval_file

_IDS = [case.expected for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_the_command_prints_what_trec_eval_prints(case: TrecCase, tmp_path: Path) -> None:
    done = run("eval", *case.cli_args(), "--no-store", cwd=tmp_path, home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert differences(case, done.stdout) == []


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_evaluate_trec_gives_what_trec_eval_prints(case: TrecCase) -> None:
    result = ragmeter.evaluate_trec(
        trec_eval_file(case.qrels),
        trec_eval_file(case.run),
        list(case.measures) or None,
        relevance_level=case.relevance_level or 1,
        depth=case.depth,
        complete=case.complete,
    )
    assert differences(case, result.to_trec(per_query=case.per_query)) == []


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_the_batch_api_gives_what_trec_eval_prints(case: TrecCase) -> None:
    """``score_rankings`` over each query's ranking and grades, trec_eval's convention for a
    query without a relevant document (``no_relevant="zero"``)."""
    measures = expand_measures(list(case.measures) or ["official"])
    specs = list(dict.fromkeys(m.spec for m in measures if m.spec is not None))
    run_file = read_run(trec_eval_file(case.run))
    made = trec_rows(
        read_qrels(trec_eval_file(case.qrels)), run_file, depth=case.depth, complete=case.complete
    )
    rows = made.rows
    scores = score_rankings(
        [row["retrieved_ids"] for row in rows],
        [row["reference_relevance"] for row in rows],
        specs,
        relevance_level=case.relevance_level or 1,
        no_relevant="zero",
    )
    by_spec = {spec: [float(v) for v in scores[create_metric(spec).metric_name]] for spec in specs}
    values = trec_values(measures, rows, by_spec, run_file.runid)
    assert differences(case, format_trec(measures, values, per_query=case.per_query)) == []


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("trec-parity-home")
    (home / "ragmeter.toml").write_text(
        "[server]\nmax_metrics = 500\nmax_top_k = 5000\n", encoding="utf-8"
    )
    with ServiceProcess(home) as server:
        yield server


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_the_services_trec_datasets_give_what_trec_eval_prints(
    case: TrecCase, service: ServiceProcess
) -> None:
    """Upload the files as a dataset, evaluate it as a run, and write trec_eval's table from
    the run's per-row scores."""
    measures = expand_measures(list(case.measures) or ["official"])
    specs = list(dict.fromkeys(m.spec for m in measures if m.spec is not None))
    with Client(api_base=service.api, api_key=KEY) as client:
        made = client.datasets.upload_trec(
            trec_eval_file(case.qrels),
            trec_eval_file(case.run),
            name=case.expected,
            depth=case.depth,
            complete=case.complete,
        )
        request = {
            "scene_key": "dataset",
            "datasets_name": case.expected,
            "evaluate_metrics": specs,
            "context": {"relevance_level": case.relevance_level or 1, "no_relevant": "zero"},
        }
        started = client.runs.create(request)
        info = client.runs.wait(started.run_id)
        assert info.state == "done", info
        rows = client.datasets.rows(case.expected, limit=1000).items
        scores: dict[str, list[float | None]] = {spec: [None] * len(rows) for spec in specs}
        for result in client.runs.results(started.run_id):
            scores[result.metric_name][result.row_index] = result.score
    text = format_trec(
        measures, trec_values(measures, rows, scores, made.runid), per_query=case.per_query
    )
    assert differences(case, text) == []
