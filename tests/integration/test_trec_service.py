"""TREC qrels and runs as a dataset format of the service: uploaded through the client (and
plain HTTP), stored as one row per judged query in trec_eval's ranking; bad lines, sizes
once decompressed and row counts answer a 4xx naming the line or the limit."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.client import Client
from tests.integration.service import KEY, ServiceProcess, data, failure
from tests.peer_suites._trec import trec_eval_file

pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    home = tmp_path_factory.mktemp("trec-home")
    (home / "ragmeter.toml").write_text(
        "[server]\nmax_upload_mb = 1\nmax_rows = 30\n", encoding="utf-8"
    )
    with ServiceProcess(home) as server:
        yield server


def _relstrings(rows: list[dict[str, object]]) -> dict[str, str]:
    marks = {}
    for row in rows:
        grades = row["reference_relevance"]
        assert isinstance(grades, dict) and isinstance(row["retrieved_ids"], list)
        found = [grades.get(d) for d in row["retrieved_ids"][:20]]
        marks[str(row["query"])] = "".join(
            "-" if g is None else "." if g < 0 else ">" if g > 9 else str(g) for g in found
        )
    return marks


def test_a_qrels_and_run_upload_becomes_rows_in_trec_evals_order(service: ServiceProcess) -> None:
    expected = {
        line.split("\t")[1]: line.split("\t")[2].strip().strip("'")
        for line in trec_eval_file("out.test.aql").read_text().splitlines()
        if line.startswith("relstring_20")
    }
    with Client(api_base=service.api, api_key=KEY) as client:
        made = client.datasets.upload_trec(
            trec_eval_file("qrels.rel_level"), trec_eval_file("results.test")
        )
        assert (made.name, made.row_count, made.runid) == ("results", 3, "STANDARD")
        assert made.source == "qrels.rel_level + results.test (runid STANDARD)"
        assert made.unjudged_queries == made.missing_queries == 0 and made.note is None
        rows = client.datasets.rows("results").items
    assert [len(r["retrieved_ids"]) for r in rows] == [500, 500, 500]
    assert _relstrings(rows) == expected  # trec_eval's own relstring_20 lines (-l2 test)
    assert sum(len(r["reference_relevance"]) for r in rows) == 3681


def test_complete_and_depth_shape_the_rows(service: ServiceProcess) -> None:
    with Client(api_base=service.api, api_key=KEY) as client:
        skipped = client.datasets.upload_trec(
            trec_eval_file("qrels.test"), trec_eval_file("results.trunc"), name="trunc"
        )
        assert skipped.row_count == 2 and skipped.missing_queries == 1
        assert skipped.note == (
            "1 judged query is not in results.trunc: skipped (302; the form field "
            "complete=true scores them 0)"
        )
        made = client.datasets.upload_trec(
            trec_eval_file("qrels.test"),
            trec_eval_file("results.trunc"),
            name="trunc-complete",
            depth=50,
            complete=True,
        )
        rows = client.datasets.rows("trunc-complete").items
    assert made.row_count == 3 and made.note is None
    assert [(r["query"], len(r["retrieved_ids"])) for r in rows] == [
        ("301", 50),
        ("302", 0),
        ("303", 50),
    ]


def test_a_bad_line_is_refused_naming_file_line_and_field(service: ServiceProcess) -> None:
    qrels = b"q1 0 d1 1\nq1 0 d2 one\n"
    run = b"q1 Q0 d1 1 0.5 r\n"
    with service.client() as http:
        before = data(http.get("/datasets"))["total"]
        message = failure(
            http.post("/datasets/trec", files={"qrels": ("qrels.txt", qrels), "run": ("r", run)}),
            400,
        )
        assert message.startswith("qrels.txt line 2 field 'REL': expected an integer")
        message = failure(
            http.post(
                "/datasets/trec",
                files={"qrels": ("q", b"q1 0 d1 1\n"), "run": ("run.txt", b"q1 Q0 d1 1 0.5\n")},
            ),
            400,
        )
        assert message.startswith("run.txt line 1 field 'RUNID': missing")
        failure(http.post("/datasets/trec", files={"qrels": ("q", qrels)}), 422)  # no run
        after = data(http.get("/datasets"))["total"]
    assert after == before


def test_sizes_are_capped_once_decompressed_and_rows_by_count(
    service: ServiceProcess, tmp_path: Path
) -> None:
    big = trec_eval_file("results.comment.test.gz")
    assert big.stat().st_size < 1_000_000 < len(gzip.decompress(big.read_bytes()))
    qrels = trec_eval_file("qrels.comment.test.gz").read_bytes()
    many = b"".join(b"q%d 0 d 1\n" % i for i in range(31))
    run = b"".join(b"q%d Q0 d 1 1.0 r\n" % i for i in range(31))
    with service.client() as http:
        files = {"qrels": ("qrels.gz", qrels), "run": ("results.gz", big.read_bytes())}
        named = {"name": "too-large"}  # a name of its own: a taken name is refused first
        message = failure(http.post("/datasets/trec", files=files, data=named), 413)
        assert "results.gz holds more than 1 MB of text (decompressed)" in message
        assert "[server] max_upload_mb" in message
        files = {"qrels": ("q", many), "run": ("r", run)}
        message = failure(http.post("/datasets/trec", files=files), 413)
        assert "make 31 rows" in message and "[server] max_rows" in message
        plain = {"qrels": ("q", b"q 0 d 1\n" * 1), "run": ("r", b"q Q0 d 1 1 r\n" * 90_000)}
        message = failure(http.post("/datasets/trec", files=plain), 413)  # the upload cap
        assert "max_upload_mb" in message
