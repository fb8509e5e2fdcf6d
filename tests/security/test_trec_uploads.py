"""TREC uploads and trec_eval's measure forms, attacked with one valid key: a gzip bomb of one
long line stays within the upload cap in the server's memory; a damaged gzip, a query with more
results than a row holds, non-finite parameters and a long ``P.`` list are 4xx naming what is
wrong, before the work they would cost; a dataset name already taken is refused before the files
are read; a huge bad value is not echoed back whole."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.service import ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores

QRELS = b"q1 0 d1 1\nq1 0 d2 0\n"
RUN = b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("trec-attack-home")
    (home / "ragmeter.toml").write_text(
        "[server]\nmax_upload_mb = 5\nmax_row_items = 100\n", encoding="utf-8"
    )
    with ServiceProcess(home) as server:
        yield server


def _upload(server: ServiceProcess, qrels: bytes, run: bytes, **form: Any) -> Any:
    with server.client() as http:
        return http.post(
            "/datasets/trec",
            files={"qrels": ("q.txt", qrels, "text/plain"), "run": ("r.txt", run, "text/plain")},
            data={k: str(v) for k, v in form.items()},
        )


def _peak_kib(server: ServiceProcess) -> int:
    assert server.proc is not None
    status = Path(f"/proc/{server.proc.pid}/status").read_text(encoding="ascii")
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


def test_a_gzip_bomb_of_one_long_line_is_refused_without_holding_it(
    service: ServiceProcess,
) -> None:
    """300 MB of one line compressed to 300 KB: the reader never holds more than the 5 MB cap."""
    bomb = gzip.compress(b"a" * 300_000_000, 9)
    assert len(bomb) < 1_000_000
    before = _peak_kib(service)
    for field in ("qrels", "run"):
        files = (bomb, RUN) if field == "qrels" else (QRELS, bomb)
        message = failure(_upload(service, *files), 413)
        assert "max_upload_mb" in message, message
    assert _peak_kib(service) - before < 100_000  # KiB: far below the 300 MB of the line


def test_a_damaged_gzip_is_a_400_naming_the_file(service: ServiceProcess) -> None:
    damaged = bytearray(gzip.compress(QRELS * 500))
    damaged[20:60] = bytes(40)
    message = failure(_upload(service, bytes(damaged), RUN), 400)
    assert "cannot read it" in message and "q.txt" in message, message


def test_a_query_with_more_results_than_a_row_holds_is_refused(service: ServiceProcess) -> None:
    run = b"".join(f"q1 Q0 d{i} {i} {1000 - i} r\n".encode() for i in range(150))
    message = failure(_upload(service, QRELS, run), 413)
    assert "[server] max_row_items" in message and "q1" in message and "150" in message
    # --depth (the form's depth) keeps the first N, within the cap
    assert data(_upload(service, QRELS, run, depth=50, name="deep"), 201)["row_count"] == 1


def test_a_row_with_more_items_than_a_row_holds_is_refused(service: ServiceProcess) -> None:
    row = {"query": "q", "retrieved_ids": [f"d{i}" for i in range(101)], "reference_ids": ["d1"]}
    body = {"scene_key": "dataset", "evaluate_metrics": ["map"], "datasets": [row]}
    with service.client() as http:
        message = failure(http.post("/evaluate/evaluation", json=body), 413)
    assert "field 'retrieved_ids' holds 101 items" in message and "max_row_items" in message


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("P." + ",".join(str(i) for i in range(1, 200_000)), "characters long"),
        ("P.inf", "not finite"),
        ("success.1,nan", "not finite"),
        ("relstring.inf", "not finite"),
        ("set_f(beta=inf)", "finite"),
        ("precision(rel=99999999999)@5", "rel must be a whole number from 1 to 1000"),
        ("ndcg(gains={1:3,1:4})", "given twice"),
    ],
    ids=["long P list", "P.inf", "nan cut", "relstring inf", "beta inf", "huge rel", "gains twice"],
)
def test_bad_trec_and_metric_parameters_are_400s(
    service: ServiceProcess, spec: str, says: str
) -> None:
    row = {"query": "q", "retrieved_ids": ["d1"], "reference_relevance": {"d1": 1}}
    body = {"scene_key": "dataset", "evaluate_metrics": [spec], "datasets": [row]}
    with service.client() as http:
        message = failure(http.post("/evaluate/evaluation", json=body), 400)
    assert says in message, message
    assert len(message) < 2_000


def test_a_huge_bad_context_value_is_not_echoed_back(service: ServiceProcess) -> None:
    row = {"query": "q", "retrieved_ids": ["d1"], "reference_relevance": {"d1": 1}}
    body = {
        "scene_key": "dataset",
        "evaluate_metrics": ["map"],
        "datasets": [row],
        "context": {"no_relevant": "x" * 1_000_000},
    }
    with service.client() as http:
        message = failure(http.post("/evaluate/evaluation", json=body), 400)
    assert "context.no_relevant" in message and len(message) < 2_000


def test_a_dataset_name_already_taken_gets_a_version_and_bad_files_are_refused(
    service: ServiceProcess,
) -> None:
    first = data(_upload(service, QRELS, RUN, name="taken"), 201)
    assert (first["name"], first["version"], first["reused"]) == ("taken", 1, False)
    again = data(_upload(service, QRELS, RUN, name="taken"), 201)  # the same rows: kept once
    assert (again["id"], again["version"], again["reused"]) == (first["id"], 1, True)
    # files that are not TREC files add no version, and say which file is wrong
    message = failure(_upload(service, b"not qrels", b"not a run", name="taken"), 400)
    assert "line 1" in message and len(message) < 2_000
    with service.client() as http:
        versions = data(http.get("/datasets/taken/versions"))
    assert [v["version"] for v in versions] == [1]
