"""The dashboard's Spaces and Datasets views and its New run form, in real Chromium over a real
``ragmeter serve`` (a scripted judge, a space on the ``hashed`` embedder): a space's documents
and chunks paged as the API pages them, the playground's three retrievers answering as the API
does, uploads stored or refused with the server's own message, and runs started from the form
that finish with the API's means. English and Chinese screenshots of each view."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from ragmeter.testing import ScriptedJudgeServer
from tests.browser.helpers import api as _api
from tests.browser.helpers import page_errors as _errors
from tests.integration.helpers import GUIDE_AWEL, NOTES_AWEL, TEA, write_models
from tests.integration.service import KEY, ServiceProcess, data, failure, wait_run

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]

#: a document of 30 sections: more chunks than one page of the chunk table (20) holds
PARTS = "# Parts\n\n" + "".join(
    f"## Part {i}\n\nPart {i} of the pipeline writes its output to stage {i}.\n\n"
    for i in range(30)
)
DOCUMENTS = {"awel.md": GUIDE_AWEL, "notes.md": NOTES_AWEL, "tea.md": TEA, "parts.md": PARTS}
RECALL_ROWS = [
    {"query": "What is AWEL?", "doc_name": "awel.md"},
    {"query": "Which operators build a DAG?", "doc_name": "notes.md"},
    {"query": "绿茶用多少度的水？", "doc_name": "tea.md"},
    {"query": "Where does part 7 write its output?", "doc_name": "parts.md"},
    {"query": "Where does part 9 write its output?", "doc_name": "tea.md"},  # a miss
]
JUDGED_ROWS = [
    {
        "query": f"What does step {i} do?",
        "response": f"Step {i} installs the package.",
        "contexts": [f"Step {i} installs the package."],
    }
    for i in range(4)
]
MAX_TOP_K = 50


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def _upload(http: httpx.Client, name: str, rows: list[dict[str, Any]]) -> None:
    files = {"file": (f"{name}.jsonl", _jsonl(rows), "application/x-ndjson")}
    data(http.post("/datasets", data={"name": name}, files=files), 201)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[ServiceProcess]:
    """A keyless server (``[server] max_top_k = 50``) over a space ``awel`` of four documents
    and the datasets ``recall-qa`` and ``judged``."""
    home = tmp_path_factory.mktemp("dashboard-browse")
    with ScriptedJudgeServer() as judge:
        write_models(home, judge.url)
        with (home / "ragmeter.toml").open("a", encoding="utf-8") as config:
            config.write(f"\n[server]\nmax_top_k = {MAX_TOP_K}\n")
        with ServiceProcess(home, keys=None) as served, served.client(None) as http:
            data(http.post("/knowledge/spaces", json={"name": "awel", "embedder": "hashed"}), 201)
            files = [
                ("files", (n, text.encode(), "text/markdown")) for n, text in DOCUMENTS.items()
            ]
            data(http.post("/knowledge/spaces/awel/documents", files=files))
            _upload(http, "recall-qa", RECALL_ROWS)
            _upload(http, "judged", JUDGED_ROWS)
            yield served


def test_the_spaces_view_lists_a_space_and_pages_its_chunks(
    page: Page, server: ServiceProcess, shoot: Shoot
) -> None:
    errors = _errors(page)
    page.goto(f"{server.url}/#/runs")
    page.get_by_role("navigation", name="Views").get_by_role("link", name="Spaces").click()
    expect(page).to_have_url(re.compile(r"#/spaces$"))
    space = _api(server, "/knowledge/spaces/awel")
    row = page.locator('tr[data-space="awel"]')
    expect(row).to_contain_text("hashed")
    expect(row.locator("td").nth(1)).to_have_text("4")
    expect(row.locator("td").nth(2)).to_have_text(str(space["chunks"]))
    expect(page.locator("main")).not_to_contain_text("null")  # nothing stray
    shoot(page, "dashboard-spaces-en")
    row.get_by_role("link", name="awel").click()
    expect(page).to_have_url(re.compile(r"#/spaces/awel$"))
    expect(page.locator("h1")).to_have_text("Space awel")
    docs = page.locator("table.docs tbody tr")
    expect(docs).to_have_count(4)
    expect(page.locator("#docs-body")).not_to_contain_text("null")
    chunks = _api(server, "/knowledge/spaces/awel/chunks", limit=20)
    assert chunks["total"] > 20
    caption = page.locator("table.chunks caption")
    expect(caption).to_have_text(f"{chunks['total']} chunks")
    shown = page.locator("table.chunks tbody tr")
    expect(shown).to_have_count(20)
    ids = shown.evaluate_all("rows => rows.map(r => Number(r.dataset.chunk))")
    assert ids == [c["id"] for c in chunks["items"]]
    pager = page.get_by_role("navigation", name="Pages of chunks")
    expect(pager).to_contain_text(f"1–20 of {chunks['total']}")
    pager.get_by_role("button", name="Next").click()
    expect(page).to_have_url(re.compile(r"cpage=2"))
    second = _api(server, "/knowledge/spaces/awel/chunks", offset=20, limit=20)
    expect(shown.first).to_have_attribute("data-chunk", str(second["items"][0]["id"]))
    # one document's chunks: the filter from its row, kept in the URL across a reload
    page.get_by_role("button", name="Show the chunks of tea.md").click()
    expect(page).to_have_url(re.compile(r"doc=tea\.md"))
    tea = _api(server, "/knowledge/spaces/awel/chunks", doc_name="tea.md")
    expect(caption).to_have_text(f"{tea['total']} chunks")
    expect(page.get_by_label("Document", exact=True)).to_have_value("tea.md")
    page.reload()
    expect(caption).to_have_text(f"{tea['total']} chunks")
    expect(shown.first).to_contain_text("绿茶")
    page.get_by_label("Document", exact=True).fill("no-such.md")
    expect(page.locator("#chunks-body [role=alert]")).to_contain_text("no-such.md")
    assert errors == []


def _playground(page: Page, text: str, top_k: int) -> None:
    page.get_by_label("Query", exact=True).fill(text)
    page.get_by_label("top_k", exact=True).fill(str(top_k))
    page.get_by_role("button", name="Retrieve").click()


def test_the_playground_runs_three_retrievers_side_by_side(
    page: Page, server: ServiceProcess, shoot: Shoot
) -> None:
    errors = _errors(page)
    page.goto(f"{server.url}/#/spaces/awel")
    page.wait_for_selector("table.chunks")
    _playground(page, "AWEL operator layer", 3)
    expect(page).to_have_url(re.compile(r"q=AWEL\+operator\+layer&k=3"))
    with server.client(None) as http:
        for retriever in ("vector", "bm25", "hybrid"):
            body = {"query": "AWEL operator layer", "top_k": 3, "retriever": retriever}
            hits = data(http.post("/knowledge/spaces/awel/retrieve", json=body))
            assert len(hits) == 3
            column = page.locator(f'section.retriever[data-retriever="{retriever}"]')
            items = column.locator("li.hit")
            expect(items).to_have_count(3)
            shown = items.evaluate_all("items => items.map(i => Number(i.dataset.chunk))")
            assert shown == [hit["chunk_id"] for hit in hits], retriever
            expect(items.first.locator(".score")).to_have_text(f"{hits[0]['score']:.4f}")
            expect(items.first.locator(".rank")).to_have_text("#1")
            expect(items.first).to_contain_text(hits[0]["content"][:40])
    shoot(page, "dashboard-space-en")
    # the same search in Chinese after a reload (the query is in the URL)
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("h2").first).to_have_text("检索试验台")
    expect(page.locator("li.hit")).to_have_count(9)
    shoot(page, "dashboard-space-zh")
    page.get_by_label("语言").select_option("en")
    # past the server's cap: every column shows the server's own message
    with server.client(None) as http:
        body = {"query": "AWEL", "top_k": MAX_TOP_K + 1, "retriever": "bm25"}
        message = failure(http.post("/knowledge/spaces/awel/retrieve", json=body), 400)
    page.get_by_label("top_k", exact=True).fill(str(MAX_TOP_K + 1))
    page.get_by_label("Query", exact=True).fill("AWEL")
    page.get_by_label("Query", exact=True).press("Enter")  # the keyboard submits too
    alerts = page.locator("section.retriever [role=alert]")
    expect(alerts).to_have_count(3)
    for i in range(3):
        expect(alerts.nth(i)).to_have_text(message)
    assert "max_top_k" in message
    # checked before sending
    _playground(page, "  ", 3)
    expect(page.locator("#pg-note")).to_have_text("Type a query first.")
    shoot(page, "dashboard-space-errors")
    assert errors == []


def test_the_datasets_view_lists_shows_rows_and_uploads(
    page: Page, server: ServiceProcess, shoot: Shoot
) -> None:
    errors = _errors(page)
    page.goto(f"{server.url}/#/runs")
    page.get_by_role("navigation", name="Views").get_by_role("link", name="Datasets").click()
    expect(page).to_have_url(re.compile(r"#/datasets$"))
    row = page.locator('tr[data-dataset="recall-qa"]')
    expect(row.locator('td[data-col="rows"]')).to_have_text(str(len(RECALL_ROWS)))
    expect(row.locator('td[data-col="version"]')).to_have_text("v1")
    expect(page.locator('tr[data-dataset="judged"]')).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("null")
    # a good file: stored, listed, its rows shown
    extra = [{"query": f"extra question {i}", "reference": f"answer {i}"} for i in range(3)]
    page.get_by_label("File").set_input_files(
        files=[{"name": "extra.jsonl", "mimeType": "application/x-ndjson", "buffer": _jsonl(extra)}]
    )
    page.get_by_label("Name", exact=True).fill("extra-qa")
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#ds-outcome [role=status]")).to_contain_text(
        "Stored 3 rows as extra-qa@1."
    )
    expect(page.locator('tr[data-dataset="extra-qa"] td[data-col="rows"]')).to_have_text("3")
    shoot(page, "dashboard-datasets-en")
    # a bad row: the server's message, naming the line and field, as it is
    bad = _jsonl([{"query": "fine"}, {"response": "no query here"}])
    with server.client(None) as http:
        files = {"file": ("broken.jsonl", bad, "application/x-ndjson")}
        message = failure(http.post("/datasets", files=files), 400)
    assert "line 2" in message and "'query'" in message
    page.get_by_label("Name", exact=True).fill("")
    page.get_by_label("File").set_input_files(
        files=[{"name": "broken.jsonl", "mimeType": "application/x-ndjson", "buffer": bad}]
    )
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#ds-error")).to_have_text(message)
    assert "broken" not in [d["name"] for d in _api(server, "/datasets")["items"]]
    shoot(page, "dashboard-datasets-refused")
    # a file of another kind is named before sending
    page.get_by_label("File").set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"hello"}]
    )
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#ds-outcome [role=alert]")).to_contain_text("notes.txt is not a dataset")
    # one dataset's rows
    page.get_by_role("link", name="extra-qa", exact=True).click()
    expect(page).to_have_url(re.compile(r"#/datasets/extra-qa$"))
    expect(page.locator("h1")).to_have_text("Dataset extra-qa")
    expect(page.locator("table.dataset-rows caption")).to_have_text("3 rows")
    expect(page.locator("table.dataset-rows thead th")).to_have_text(["#", "query", "reference"])
    expect(page.locator('tr[data-row="2"]')).to_contain_text("extra question 2")
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("h1")).to_have_text("数据集 extra-qa")
    shoot(page, "dashboard-dataset-zh")
    page.goto(f"{server.url}/#/datasets")
    expect(page.get_by_role("heading", name="上传数据集")).to_be_visible()
    shoot(page, "dashboard-datasets-zh")
    assert errors == []


def _wait_done(page: Page, server: ServiceProcess) -> dict[str, Any]:
    expect(page).to_have_url(re.compile(r"#/runs/[^/?]+$"))
    run_id = page.url.rsplit("/", 1)[1]
    with server.client(None) as http:
        run = wait_run(http, run_id)
    assert run["state"] == "done", run
    expect(page.locator("#run-state")).to_have_text("done", timeout=20_000)
    for name, s in run["summary"].items():
        card = page.locator(f'.metric-card[data-metric="{name}"]')
        expect(card.locator(".big")).to_have_text(_big(s, "interval not informative (n={n})"))
    return run


def _big(s: dict[str, Any], flagged: str) -> str:
    """A metric card's mean and interval, or its words when the server flags the interval
    (a handful of rows: not informative)."""
    if s["ci_note"]:
        return f"{s['mean']:.3f} {flagged.format(n=s['count'])}"
    return f"{s['mean']:.3f} [{s['ci95_low']:.3f}, {s['ci95_high']:.3f}]"


def test_a_recall_run_started_from_the_form_finishes(
    page: Page, server: ServiceProcess, shoot: Shoot
) -> None:
    errors = _errors(page)
    page.goto(f"{server.url}/#/runs")
    page.get_by_role("link", name="New run").click()
    expect(page).to_have_url(re.compile(r"#/newrun$"))
    expect(page.locator("h1")).to_have_text("New run")
    # nothing chosen: every mistake named, the first field focused
    page.get_by_label("Parallelism", exact=True).fill("0")
    page.get_by_role("button", name="Start run").click()
    note = page.locator("#nr-errors")
    expect(note).to_contain_text("Choose a dataset.")
    expect(note).to_contain_text("Choose at least one metric.")
    expect(note).to_contain_text("Parallelism must be a whole number from 1 to 64.")
    expect(page.get_by_label("Dataset", exact=True)).to_be_focused()
    page.get_by_label("Dataset", exact=True).select_option("recall-qa")
    page.get_by_label("A knowledge space (retrieval)").check()
    page.get_by_role("button", name="Start run").click()
    expect(note).to_contain_text("Choose the knowledge space to retrieve from.")
    page.get_by_label("Space", exact=True).select_option("awel")
    page.get_by_label("Retriever", exact=True).select_option("hybrid")
    # the scene's metrics only: no judged metric for retrieval
    expect(page.get_by_label("FaithfulnessMetric")).to_have_count(0)
    expect(page.get_by_label("RetrieverHitRateMetric")).to_have_accessible_description(
        "Hit rate (trec_eval's success): 1 if any of the top-k retrieved items is relevant, else 0."
    )
    page.get_by_label("RetrieverHitRateMetric").check()
    page.get_by_label("RetrieverMRRMetric").check()
    page.get_by_label("Parallelism", exact=True).fill("2")
    # past the server's cap: its 413, as it is
    page.get_by_label("top_k", exact=True).fill(str(MAX_TOP_K + 1))
    page.get_by_role("button", name="Start run").click()
    expect(note).to_contain_text(f"top {MAX_TOP_K + 1}")
    expect(note).to_contain_text("[server] max_top_k")
    shoot(page, "dashboard-newrun-en")
    page.get_by_label("top_k", exact=True).fill("3")
    page.get_by_role("button", name="Start run").click()
    run = _wait_done(page, server)
    assert run["scene_key"] == "recall" and run["scene_value"] == "awel"
    assert run["metrics"] == ["RetrieverHitRateMetric", "RetrieverMRRMetric"]
    assert run["progress"] == {"done": len(RECALL_ROWS), "total": len(RECALL_ROWS)}
    assert 0 < run["summary"]["RetrieverHitRateMetric"]["mean"] < 1  # the miss counts
    shoot(page, "dashboard-newrun-done")
    assert errors == []


def test_a_judged_run_started_from_the_form_finishes(
    page: Page, server: ServiceProcess, shoot: Shoot
) -> None:
    errors = _errors(page)
    page.goto(f"{server.url}/#/datasets")
    page.get_by_role("link", name="Start a run over judged").click()
    expect(page).to_have_url(re.compile(r"#/newrun\?dataset=judged$"))
    expect(page.get_by_label("Dataset", exact=True)).to_have_value("judged")
    page.get_by_label("FaithfulnessMetric").check()
    page.get_by_label("RetrieverHitRateMetric").check()
    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#nr-errors")).to_contain_text(
        "FaithfulnessMetric need a judge model: choose one."
    )
    page.get_by_label("RetrieverHitRateMetric").uncheck()
    page.get_by_label("Judge model", exact=True).select_option("scripted")
    page.get_by_label("Language").select_option("zh")  # the form is rebuilt in Chinese
    expect(page.locator("h1")).to_have_text("新建评测")
    page.get_by_label("数据集", exact=True).select_option("judged")
    page.get_by_label("FaithfulnessMetric").check()
    page.get_by_label("评审模型", exact=True).select_option("scripted")
    # each metric described in Chinese too (the server's descriptions are English)
    expect(page.get_by_label("FaithfulnessMetric")).to_have_accessible_description(
        "Faithfulness = 得到支持的回答陈述数 / 回答陈述数，每条陈述都对照检索到的上下文核查。"
    )
    expect(page.get_by_label("RetrieverHitRateMetric")).to_have_accessible_description(
        re.compile(r"^命中率：")
    )
    assert not page.locator(".metric-choice p").filter(has_text=re.compile(r"^[ -~]+$")).count()
    shoot(page, "dashboard-newrun-zh")
    page.get_by_role("button", name="开始评测").click()
    expect(page).to_have_url(re.compile(r"#/runs/[^/?]+$"))
    run_id = page.url.rsplit("/", 1)[1]
    with server.client(None) as http:
        run = wait_run(http, run_id)
    assert run["state"] == "done" and run["metrics"] == ["FaithfulnessMetric"], run
    expect(page.locator("#run-state")).to_have_text("已完成", timeout=20_000)
    s = run["summary"]["FaithfulnessMetric"]
    assert s["count"] == len(JUDGED_ROWS)
    card = page.locator('.metric-card[data-metric="FaithfulnessMetric"]')
    assert s["ci_note"] and s["small_sample"]  # a handful of judged rows
    expect(card.locator(".big")).to_have_text(_big(s, "区间无参考意义（n={n}）"))
    assert run["cost"]["requests"] > 0
    assert errors == []


def test_empty_stores_and_unknown_names_say_so(page: Page, tmp_path: Path, shoot: Shoot) -> None:
    errors = _errors(page)
    with ServiceProcess(tmp_path / "empty", keys=None) as empty:
        page.goto(f"{empty.url}/#/spaces")
        expect(page.locator(".empty")).to_contain_text("No knowledge spaces yet.")
        shoot(page, "dashboard-spaces-empty")
        page.goto(f"{empty.url}/#/datasets")
        expect(page.locator(".empty")).to_contain_text("No datasets yet.")
        shoot(page, "dashboard-datasets-empty")
        page.goto(f"{empty.url}/#/newrun")
        expect(page.locator("form.new-run")).to_contain_text("No stored dataset yet")
        page.get_by_label("A knowledge space (retrieval)").check()
        expect(page.locator("#nr-recall")).to_contain_text("No knowledge space yet.")
        expect(page.locator("form.new-run")).to_contain_text("No model in ragmeter.toml")
        shoot(page, "dashboard-newrun-empty")
        with empty.client(None) as http:
            space = failure(http.get("/knowledge/spaces/nope"), 404)
            dataset = failure(http.get("/datasets/nope"), 404)
        page.goto(f"{empty.url}/#/spaces/nope")
        expect(page.get_by_role("alert")).to_contain_text(space)
        page.goto(f"{empty.url}/#/datasets/nope")
        expect(page.get_by_role("alert")).to_contain_text(dataset)
    assert errors == []


def test_with_keys_an_upload_goes_with_the_session_and_its_csrf_token(
    page: Page, tmp_path: Path
) -> None:
    """A multipart upload is a change: the session cookie alone is not enough, the page sends
    the CSRF token with it (a request without the token is refused)."""
    errors = _errors(page)
    with ServiceProcess(tmp_path / "keyed") as keyed:
        page.goto(f"{keyed.url}/#/datasets")
        page.get_by_label("API key").fill(KEY)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Upload a dataset")).to_be_visible()
        rows = [{"query": "signed in"}]
        page.get_by_label("File").set_input_files(
            files=[
                {"name": "keyed.jsonl", "mimeType": "application/x-ndjson", "buffer": _jsonl(rows)}
            ]
        )
        page.get_by_role("button", name="Upload").click()
        expect(page.locator("#ds-outcome [role=status]")).to_contain_text(
            "Stored 1 row as keyed@1."
        )
        refused = page.evaluate(
            """async () => {
                const form = new FormData();
                form.append("file", new Blob(['{"query": "x"}']), "forged.jsonl");
                const r = await fetch("/api/v2/serve/datasets", { method: "POST", body: form });
                return r.status;
            }"""
        )
        assert refused in (401, 403)
        with keyed.client() as http:
            names = [d["name"] for d in data(http.get("/datasets"))["items"]]
        assert names == ["keyed"]
    assert errors == []
