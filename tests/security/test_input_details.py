"""Finding 9, through the service: files with a UTF-8 byte order mark load, and an error in a
CSV names the line its row starts on although a cell before it spans lines. (The 0-5 score
replies, unit vectors from a user's embedder, ``sync_compute`` in a running loop and the
``openai`` floor are checked in tests/unit/test_input_details.py and
tests/unit/test_templates_and_scores.py; a run with no score in a metric exiting non-zero in
tests/integration/test_cli_polish.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.service import ServiceProcess, data, failure


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path_factory.mktemp("details-home")) as server:
        yield server


def _upload(service: ServiceProcess, name: str, content: bytes, status: int) -> object:
    with service.client() as http:
        response = http.post("/datasets", files={"file": (name, content)})
    return data(response, status) if status < 400 else failure(response, status)


def test_files_with_a_byte_order_mark_load(service: ServiceProcess) -> None:
    bom = b"\xef\xbb\xbf"
    jsonl = bom + b'{"query": "q1", "reference_contexts": ["a"]}\n{"query": "q2"}\n'
    csv = bom + b"query,reference\nq1,r1\nq2,r2\n"
    assert _upload(service, "bom.jsonl", jsonl, 201)["row_count"] == 2  # type: ignore[index]
    assert _upload(service, "bom-table.csv", csv, 201)["row_count"] == 2  # type: ignore[index]
    with service.client() as http:
        rows = data(http.get("/datasets/bom/rows"))["items"]
    assert [r["query"] for r in rows] == ["q1", "q2"]  # not '\ufeffquery'


def test_a_csv_error_names_the_line_its_row_starts_on(service: ServiceProcess) -> None:
    csv = (
        b'query,reference\n"a question\nwritten on\nthree lines",fine\n'
        b",no query here\n"  # line 5: the row after a cell spanning lines 2-4
    )
    message = _upload(service, "lines.csv", csv, 400)
    assert "line 5" in str(message) and "query" in str(message), message
