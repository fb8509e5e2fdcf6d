"""Attacks on the label routes of a real ``ragmeter serve`` (SQLite, then PostgreSQL): a viewer
labels; a reviewer or member labels as someone else; an import past ``[server] max_labels``
or ``max_labels_mb``; a label of a row the dataset does not have; a label sent on one run's
path meant for another dataset. Each is refused with the status and the reason named, and
nothing is kept."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

V2 = "/api/v2/serve"
CONFIG = "[server]\nmax_labels = 5\nmax_labels_mb = 0.01\n"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_kind: str
) -> Iterator[tuple[ServiceProcess, dict[str, str]]]:
    home: Path = tmp_path_factory.mktemp("label-attacks")
    (home / "ragmeter.toml").write_text(CONFIG, encoding="utf-8")
    server, keys = users_server(home)
    try:
        yield server, keys
    finally:
        server.stop()


def _dataset(http: httpx.Client, rows: int = 3) -> str:
    tag = uuid.uuid4().hex[:8]
    name = f"ds-{tag}"
    lines = [
        {"id": f"{tag}-{i}", "query": f"q{i} {tag}", "retrieved_ids": ["a"], "reference_ids": ["a"]}
        for i in range(rows)
    ]
    files = {"file": ("rows.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode())}
    data(http.post(f"{V2}/datasets", files=files, data={"name": name}), 201)
    return name


def _run(http: httpx.Client, dataset: str) -> str:
    body = {"scene_key": "dataset", "datasets_name": dataset, "evaluate_metrics": ["mrr"]}
    run_id: str = data(http.post(f"{V2}/evaluate/runs", json=body), 202)["run_id"]
    http.base_url = http.base_url.join(f"{V2}/")
    try:
        wait_run(http, run_id)
    finally:
        http.base_url = http.base_url.join("/")
    return run_id


def _labels(http: httpx.Client, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = data(http.get(f"{V2}/{path}/labels"))["items"]
    return items


def _one(**label: Any) -> dict[str, Any]:
    return {"labels": [{"row_index": 0, "metric": "faithfulness", "value": 1, **label}]}


def test_a_viewer_cannot_label_but_reads(served: tuple[ServiceProcess, dict[str, str]]) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member, as_user(server, keys["viewer"]) as viewer:
        name = _dataset(member)
        run_id = _run(member, name)
        for path in (f"datasets/{name}", f"evaluate/runs/{run_id}"):
            message = failure(viewer.post(f"{V2}/{path}/labels", json=_one()), 403)
            assert "user 'viewer' has role 'viewer'" in message and "label" in message
            assert _labels(viewer, path) == []


@pytest.mark.parametrize("who", ["reviewer", "member"])
def test_no_one_but_an_admin_labels_as_someone_else(
    served: tuple[ServiceProcess, dict[str, str]], who: str
) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member, as_user(server, keys[who]) as sender:
        name = _dataset(member)
        path = f"{V2}/datasets/{name}/labels"
        body = {"labels": [*_one(reviewer=who)["labels"], *_one(reviewer="admin")["labels"]]}
        message = failure(sender.post(path, json=body), 403)
        assert f"user '{who}'" in message and "label as 'admin'" in message
        assert _labels(sender, f"datasets/{name}") == []  # all or none
        data(sender.post(path, json=_one(reviewer=who)), 201)  # as themselves: fine
    with as_user(server, keys["admin"]) as admin:
        data(admin.post(path, json=_one(reviewer="ann")), 201)
        kept = _labels(admin, f"datasets/{name}")
    assert sorted(label["reviewer"] for label in kept) == ["ann", who]


def test_a_huge_import_is_refused_naming_the_cap(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["reviewer"]) as reviewer, as_user(server, keys["member"]) as member:
        name = _dataset(member)
        path = f"{V2}/datasets/{name}/labels"
        many = {"labels": [_one()["labels"][0] for _ in range(6)]}
        message = failure(reviewer.post(path, json=many), 413)
        assert "6 labels in one request; at most 5 ([server] max_labels)" in message
        long = {"labels": [_one(comment="x" * 2000)["labels"][0] for _ in range(5)]}
        message = failure(reviewer.post(path, json=long), 413)
        assert "larger than 0.01 MB ([server] max_labels_mb)" in message
        assert _labels(reviewer, f"datasets/{name}") == []


def test_a_download_past_the_cap_is_refused_naming_it(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    """Two imports of five labels make ten: a download holds at most ``max_labels`` (5), so
    the whole file is refused (a page of JSON, or one reviewer's five, is not)."""
    server, keys = served
    with as_user(server, keys["reviewer"]) as reviewer, as_user(server, keys["member"]) as member:
        name = _dataset(member, rows=5)
        path = f"{V2}/datasets/{name}/labels"
        five = [{"row_index": i, "metric": "faithfulness", "value": 1} for i in range(5)]
        data(reviewer.post(path, json={"labels": five}), 201)
        data(member.post(path, json={"labels": five}), 201)
        message = failure(member.get(path, params={"format": "csv"}), 422)
        assert "10 labels to download; a download holds at most 5" in message
        assert message.endswith("([server] max_labels)")
        mine = member.get(path, params={"format": "jsonl", "reviewer": "member"})
        assert mine.status_code == 200 and len(mine.text.splitlines()) == 5
        assert data(member.get(path, params={"limit": 3}))["total"] == 10


def test_a_row_outside_the_dataset_is_422_naming_it(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member:
        name = _dataset(member, rows=3)
        run_id = _run(member, name)
        for path in (f"datasets/{name}", f"evaluate/runs/{run_id}"):
            body = {"labels": [*_one()["labels"], *_one(row_index=3)["labels"]]}
            message = failure(member.post(f"{V2}/{path}/labels", json=body), 422)
            assert "label 2" in message and "field 'row_index'" in message
            assert "row 3 is not in the dataset (rows 0 to 2)" in message
            body = {"labels": [{"row_id": "not-a-row", "metric": "m", "value": 1}]}
            message = failure(member.post(f"{V2}/{path}/labels", json=body), 422)
            assert "no row of the dataset has row_id 'not-a-row'" in message
            assert _labels(member, path) == []


def test_a_run_path_touches_only_the_runs_dataset(
    served: tuple[ServiceProcess, dict[str, str]],
) -> None:
    server, keys = served
    with as_user(server, keys["member"]) as member:
        mine, other = _dataset(member), _dataset(member)
        run_id = _run(member, mine)
        path = f"{V2}/evaluate/runs/{run_id}/labels"
        # a body cannot name another dataset, by any field
        for field, value in (("dataset", other), ("dataset_id", 1), ("run_id", "x")):
            failure(member.post(path, json={**_one(), field: value}), 422)
            label = {**_one()["labels"][0], field: value}
            failure(member.post(path, json={"labels": [label]}), 422)
        # the other dataset's row id names no row of the run's dataset
        other_id = data(member.get(f"{V2}/datasets/{other}/rows"))["items"][0]["id"]
        body = {"labels": [{"row_id": other_id, "metric": "m", "value": 1}]}
        assert "no row of the dataset" in failure(member.post(path, json=body), 422)
        data(member.post(path, json=_one()), 201)
        assert len(_labels(member, f"datasets/{mine}")) == 1
        assert _labels(member, f"datasets/{other}") == []
        failure(member.post(f"{V2}/evaluate/runs/no-such-run/labels", json=_one()), 404)
