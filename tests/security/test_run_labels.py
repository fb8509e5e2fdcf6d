"""Run names, tags, notes, archiving, deletion and dataset versions over the service, attacked
with one valid key: every size and count a request controls is capped with a 4xx naming the
limit; a running run cannot be deleted from under its worker; a run's lineage never carries a
folder of the server; the same inline rows are stored once; two dataset versions say which
rows changed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.service import ServiceProcess, data, failure

pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    with ServiceProcess(tmp_path_factory.mktemp("labels-home")) as server:
        yield server


def _rows(n: int = 3, edit: str = "") -> list[dict[str, Any]]:
    return [
        {
            "id": f"r{i}",
            "query": f"question {i}{edit if i == 0 else ''}",
            "retrieved_ids": ["a", "b"],
            "reference_ids": ["b"],
        }
        for i in range(n)
    ]


def _start(http: httpx.Client, **body: Any) -> str:
    request = {"scene_key": "dataset", "evaluate_metrics": ["mrr"], "datasets": _rows(), **body}
    run_id: str = data(http.post("/evaluate/runs", json=request), 202)["run_id"]
    return run_id


def _done(http: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info: dict[str, Any] = data(http.get(f"/evaluate/runs/{run_id}"))
        if info["state"] not in ("pending", "running"):
            return info
        time.sleep(0.05)
    raise AssertionError("the run did not finish")


def test_a_run_keeps_its_name_tags_note_and_lineage(service: ServiceProcess) -> None:
    with service.client() as http:
        run_id = _start(http, name="service run", tags=["api", "nightly"], note="from a test")
        info = _done(http, run_id)
        again = _done(http, _start(http))
    assert (info["name"], info["tags"], info["note"]) == ("service run", ["api", "nightly"],
                                                           "from a test")  # fmt: skip
    assert info["label"] == "given answers" and info["lineage"]["metrics"] == ["mrr"]
    assert info["lineage"]["code"] is None  # the server's own folder is not the client's code
    assert str(service.home) not in json.dumps(info)
    assert info["dataset"]["name"] is None  # inline rows ...
    assert again["dataset_id"] == info["dataset_id"]  # ... stored once, however often sent


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"tags": [f"t{i}" for i in range(21)]}, "at most 20 tags"),
        ({"tags": ["x" * 101]}, "invalid tag"),
        ({"tags": ["<script>"]}, "invalid tag '<script>'"),
        ({"note": "n" * 4001}, "at most 4000 characters"),
        ({"name": "n" * 201}, "1 to 200 characters"),
        ({"name": "   "}, "1 to 200 characters"),
    ],
)
def test_labels_past_their_caps_are_refused_naming_the_limit(
    service: ServiceProcess, body: dict[str, Any], named: str
) -> None:
    with service.client() as http:
        before = data(http.get("/evaluate/runs", params={"archived": "all"}))["total"]
        message = failure(http.post("/evaluate/runs", json={"scene_key": "dataset", "evaluate_metrics": ["mrr"],
                                                            "datasets": _rows(), **body}), 400)  # fmt: skip
        after = data(http.get("/evaluate/runs", params={"archived": "all"}))["total"]
    assert named in message and len(message) < 500 and after == before  # nothing stored


def test_patch_renames_tags_archives_and_refuses_what_it_does_not_know(
    service: ServiceProcess,
) -> None:
    with service.client() as http:
        run_id = _start(http, name="to change")
        _done(http, run_id)
        changed = data(http.patch(f"/evaluate/runs/{run_id}", json={
            "name": "changed", "note": "kept", "add_tags": ["gold", "v1"], "remove_tags": ["v1"],
        }))  # fmt: skip
        assert (changed["name"], changed["note"], changed["tags"]) == ("changed", "kept", ["gold"])
        found = data(http.get("/evaluate/runs", params={"tag": ["gold"]}))["items"]
        assert [r["run_id"] for r in found] == [run_id]
        data(http.patch(f"/evaluate/runs/{run_id}", json={"archived": True}))
        listed = data(http.get("/evaluate/runs", params={"limit": 1000}))["items"]
        archived = data(http.get("/evaluate/runs", params={"archived": "yes"}))["items"]
        assert run_id not in {r["run_id"] for r in listed}
        assert [r["run_id"] for r in archived] == [run_id]
        # what PATCH does not take, and sizes past the caps: 422 naming the field
        for body, field in (
            ({"state": "done"}, "state"),
            ({"name": "n" * 201}, "name"),
            ({"add_tags": [f"t{i}" for i in range(21)]}, "add_tags"),
            ({"note": "n" * 4001}, "note"),
        ):
            message = failure(http.patch(f"/evaluate/runs/{run_id}", json=body), 422)
            assert field in message and len(message) < 1_000
        message = failure(http.patch(f"/evaluate/runs/{run_id}", json={"add_tags": ["a b"]}), 400)
        assert "invalid tag 'a b'" in message
        too_many = [("tag", f"t{i}") for i in range(21)]
        assert http.get("/evaluate/runs", params=too_many).status_code == 422
        assert failure(http.patch("/evaluate/runs/nope", json={"name": "x"}), 404)


def test_a_running_run_cannot_be_deleted_a_finished_one_can(service: ServiceProcess) -> None:
    with service.client() as http:
        slow = {"scene_key": "dataset", "evaluate_metrics": ["mrr"], "datasets": _rows(20_000)}
        run_id = data(http.post("/evaluate/runs", json=slow), 202)["run_id"]
        response = http.delete(f"/evaluate/runs/{run_id}")
        if response.status_code == 409:  # caught while pending or running, as intended
            assert "cancel it before deleting it" in failure(response, 409)
            _done(http, run_id)
            response = http.delete(f"/evaluate/runs/{run_id}")
        assert data(response)["run_id"] == run_id
        assert failure(http.get(f"/evaluate/runs/{run_id}"), 404)


def test_two_dataset_versions_say_which_rows_changed(service: ServiceProcess) -> None:
    def upload(http: httpx.Client, rows: list[dict[str, Any]]) -> dict[str, Any]:
        text = "".join(json.dumps(r) + "\n" for r in rows).encode()
        files = {"file": ("versions.jsonl", text, "application/x-ndjson")}
        out: dict[str, Any] = data(http.post("/datasets", files=files), 201)
        return out

    with service.client() as http:
        first = upload(http, _rows(3))
        second = upload(http, [*_rows(3, edit=" (edited)")[:2], *_rows(5)[3:]])  # r2 gone
        same = upload(http, _rows(3))
        assert (first["version"], second["version"]) == (1, 2)
        assert same["reused"] and same["id"] == first["id"]
        versions = data(http.get("/datasets/versions/versions"))
        assert [v["version"] for v in versions] == [2, 1]
        runs = []
        for key in ("versions@1", "versions@2"):
            body = {"scene_key": "dataset", "evaluate_metrics": ["mrr"], "datasets_name": key}
            runs.append(_done(http, data(http.post("/evaluate/runs", json=body), 202)["run_id"]))
        assert [r["dataset"]["version"] for r in runs] == [1, 2]
        changes = data(http.get(f"/evaluate/runs/{runs[0]['run_id']}/changes/{runs[1]['run_id']}"))
        assert changes["rows"] == {"paired_by": "id", "added": 2, "removed": 1, "changed": 1,
                                   "unchanged": 1}  # fmt: skip
        keys = {c["key"] for c in changes["changes"]}
        assert {"dataset.version", "dataset.hash"} <= keys
        listed = data(http.get("/datasets"))["items"]
        (entry,) = [d for d in listed if d["name"] == "versions"]
        assert (entry["version"], entry["versions"], entry["runs"]) == (2, 2, 2)
        removed = data(http.delete("/datasets/versions"))
        assert removed["name"] == "versions"
        assert failure(http.get("/datasets/versions"), 404)
        # the runs keep their rows: a run's page still reads
        assert data(http.get(f"/evaluate/runs/{runs[0]['run_id']}/results"))["total"] == 3
