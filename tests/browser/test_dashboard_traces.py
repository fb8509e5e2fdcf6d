"""The Traces views in real Chromium over a real ``ragmeter serve`` with users: an app
instrumented with the OpenTelemetry SDK (OpenInference attributes: a chain, a retriever with
document ids and scores, an LLM call asking for a tool, the tool) exports to the server's
OTLP receiver with an ``ingest`` key, beside protobuf exports of other traces; the list
shows them with their service, question, latency, model, tokens and scores, and filters
them; a trace's page shows its span tree (indented, kinds, bars, attributes on click), the
row it became and its scores with the judge's reasoning; a member saves picked and filtered
traces as datasets the Datasets view lists, a viewer is offered no saving. English and
Chinese screenshots."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from playwright.sync_api import Page, expect

from ragmeter.runs.storage.traces import TraceStore
from ragmeter.store.db import Store
from ragmeter.traces.records import TraceScore
from tests.browser.helpers import page_errors, sign_in
from tests.integration.roles import as_user, users_server
from tests.integration.service import ServiceProcess, data
from tests.integration.trace_bodies import NOW, export, post, span, tid, traces

pytestmark = pytest.mark.both_stores

Shoot = Callable[[Page, str], Path]
QUESTION = "Where is my parcel 1042?"
ANSWER = "Parcel 1042 left the depot this morning."
DOCS = [
    ("kb/shipping.md#3", "Parcels leave the depot the morning after they are packed.", 0.83),
    ("kb/returns.md#1", "Returns are collected within five days.", 0.41),
]
REASONING = "The context says parcels leave the morning after packing; it says nothing of 1042."
REFUNDS = 6  # protobuf traces of service "shop", one per refund question
Served = tuple[ServiceProcess, dict[str, str], str]


def _instrumented_app(url: str, key: str) -> None:
    """One request of a RAG app instrumented by hand with OpenInference's attributes, sent
    by the SDK's own OTLP/HTTP exporter."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = OTLPSpanExporter(
        endpoint=f"{url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "parcel-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("parcel-bot")
    kind = "openinference.span.kind"
    with tracer.start_as_current_span("rag-query") as root:
        root.set_attributes({kind: "CHAIN", "input.value": QUESTION, "output.value": ANSWER,
                             "session.id": "s-77", "user.id": "u-5"})  # fmt: skip
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute(kind, "RETRIEVER")
            retriever.set_attribute("input.value", QUESTION)
            for i, (doc_id, text, score) in enumerate(DOCS):
                prefix = f"retrieval.documents.{i}.document"
                retriever.set_attributes({f"{prefix}.id": doc_id, f"{prefix}.content": text,
                                          f"{prefix}.score": score})  # fmt: skip
        with tracer.start_as_current_span("chat") as llm:
            llm.set_attributes({
                kind: "LLM", "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 120, "llm.token_count.completion": 24,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": QUESTION,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call-1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_parcel",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"id": "1042"}',
            })  # fmt: skip
            with tracer.start_as_current_span("lookup_parcel") as tool:
                tool.set_attributes({kind: "TOOL", "tool.name": "lookup_parcel", "tool_call.id": "call-1",
                                     "input.value": '{"id": "1042"}', "output.value": "in transit"})  # fmt: skip
    provider.shutdown()


def _protobuf_traces(server: ServiceProcess, key: str) -> None:
    """Refund questions of service "shop" (a root and an LLM step each) and one failed
    trace of service "mail"."""
    with as_user(server, key) as sender:
        spans = []
        for n in range(REFUNDS):
            start = NOW - n * 10**9
            spans += [
                span(500 + n, 1, query=f"refund order {n}", start=start),
                span(500 + n, 2, 1, start=start),
            ]
        assert post(sender, export(spans)).status_code == 200
        failed = span(600, 1, query="send the invoice")
        failed.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="smtp refused"))
        assert post(sender, export([failed], service="mail")).status_code == 200


def _scores(url: str, app_trace: str) -> None:
    """The scores an online rule's scorer writes: the judge's, with its reasoning, on the
    app's trace; a deterministic one on each refund."""
    store = Store(url)
    try:
        found = [TraceScore(app_trace, "faithfulness", 0.5, rule="judged", passing=False,
                            feedback=REASONING, judge_model="scripted", tokens=310, scored_ns=NOW)]  # fmt: skip
        found += [
            TraceScore(
                tid(500 + n), "faithfulness", 0.9 if n % 2 else 0.2, rule="judged", scored_ns=NOW
            )
            for n in range(REFUNDS)
        ]
        TraceStore(store).put_scores(found)
    finally:
        store.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, store_kind: str) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("dashboard-traces")
    server, keys = users_server(home, extra=(("collector", "ingest"),))
    try:
        _instrumented_app(server.url, keys["collector"])
        _protobuf_traces(server, keys["collector"])
        with as_user(server, keys["admin"]) as admin:
            found = traces(admin, REFUNDS + 2, complete=True)
            app = traces(admin, 1, service="parcel-bot", complete=True)
            assert len(found) == REFUNDS + 2 and app[0]["span_count"] == 4, (found, app)
        _scores(server.store_url, app[0]["trace_id"])
        yield server, keys, app[0]["trace_id"]
    finally:
        server.stop()


def _rows(page: Page) -> Any:
    return page.locator("#traces-body tbody tr")


def test_the_list_shows_and_filters_traces(page: Page, served: Served, shoot: Shoot) -> None:
    server, keys, app_trace = served
    errors = page_errors(page)
    sign_in(page, server, keys["admin"])
    page.get_by_role("link", name="Traces").click()
    expect(page.locator("h1")).to_have_text("Traces")
    expect(page.locator("#traces-body caption")).to_have_text(f"{REFUNDS + 2} traces")
    expect(_rows(page)).to_have_count(REFUNDS + 2)
    row = page.locator(f'tr[data-trace="{app_trace}"]')
    for text in ("parcel-bot", "rag-query", QUESTION, "gpt-4o-mini", "144"):
        expect(row).to_contain_text(text)
    expect(row.locator("td.num").first).to_have_text(re.compile(r"^\d+(\.\d+)? (ms|s)$"))
    expect(row.locator('.chip[data-metric="faithfulness"]')).to_have_text("faithfulness 0.500")
    shoot(page, "dashboard-traces-list-en")
    # filters: service, status, text, a metric's score below a value, session
    page.get_by_label("Service").fill("mail")
    expect(_rows(page)).to_have_count(1)
    expect(_rows(page).first).to_contain_text("send the invoice")
    expect(_rows(page).first.locator('[data-status="error"]')).to_have_text("error")
    page.get_by_role("button", name="Clear filters").click()
    page.locator("#t-status").select_option("error")
    expect(_rows(page)).to_have_count(1)
    page.locator("#t-status").select_option("")
    page.get_by_label("Question").fill("refund")
    expect(page.locator("#traces-body caption")).to_have_text(f"{REFUNDS} traces")
    page.get_by_label("Question").fill("")
    page.get_by_label("Metric").fill("faithfulness")
    page.get_by_label("score below").fill("0.6")
    low = {tid(500 + n) for n in range(REFUNDS) if n % 2 == 0} | {app_trace}
    expect(_rows(page)).to_have_count(len(low))
    assert {r.get_attribute("data-trace") for r in _rows(page).all()} == low
    expect(page).to_have_url(re.compile(r"#/traces\?.*metric=faithfulness.*below=0\.6"))
    page.reload()  # the filters live in the URL
    expect(_rows(page)).to_have_count(len(low))
    page.get_by_role("button", name="Clear filters").click()
    page.get_by_label("Session").fill("s-77")
    expect(_rows(page)).to_have_count(1)
    page.locator("#t-range").select_option("1h")
    expect(_rows(page)).to_have_count(1)
    page.get_by_role("button", name="Clear filters").click()
    expect(_rows(page)).to_have_count(REFUNDS + 2)
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("h1")).to_have_text("链路追踪")
    expect(page.locator("#traces-body caption")).to_have_text(f"共 {REFUNDS + 2} 条链路")
    shoot(page, "dashboard-traces-list-zh")
    page.get_by_label("语言").select_option("en")
    assert errors == []


def test_a_trace_page_shows_its_span_tree_row_and_scores(
    page: Page, served: Served, shoot: Shoot
) -> None:
    server, keys, app_trace = served
    errors = page_errors(page)
    sign_in(page, server, keys["viewer"])
    page.goto(f"{server.url}/#/traces")
    page.locator(f'tr[data-trace="{app_trace}"] a').first.click()
    expect(page).to_have_url(re.compile(rf"#/traces/{app_trace}$"))
    expect(page.locator("h1")).to_have_text("Trace rag-query")
    spans = page.locator("#span-tree tbody tr[data-span]")
    expect(spans).to_have_count(4)
    tree = [
        (s.get_attribute("data-depth"), s.locator(".span-name").inner_text()) for s in spans.all()
    ]
    assert tree == [("0", "rag-query"), ("1", "retrieve"), ("1", "chat"), ("2", "lookup_parcel")]
    kinds = page.locator("#span-tree .span-kind").all_inner_texts()
    assert kinds == ["CHAIN", "RETRIEVER", "LLM", "TOOL"]
    indent = [
        s.locator(".span-name").evaluate("e => e.getBoundingClientRect().left") for s in spans.all()
    ]
    assert indent[0] < indent[1] == indent[2] < indent[3]
    assert page.locator("#span-tree svg.span-bar").count() == 4
    # a span's attributes on click
    detail = page.locator("#span-tree tr.span-detail-row").nth(1)
    expect(detail).to_be_hidden()
    spans.nth(1).locator(".span-name").click()
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("retrieval.documents.0.document.id")
    expect(detail).to_contain_text("kb/shipping.md#3")
    # the row it became: question, answer, documents with ids and scores, the tool call
    expect(page.locator("#tr-query + *")).to_have_text(QUESTION)
    expect(page.locator("#tr-response + *")).to_have_text(ANSWER)
    docs = page.locator("ol.contexts li")
    expect(docs).to_have_count(2)
    expect(docs.nth(0)).to_contain_text("kb/shipping.md#3")
    expect(docs.nth(0)).to_contain_text("score 0.830")
    expect(docs.nth(1)).to_contain_text("kb/returns.md#1")
    expect(page.locator('li[data-tool="lookup_parcel"]')).to_have_text(
        'lookup_parcel({"id": "1042"}) → in transit'
    )
    # its score with the judge's reasoning
    card = page.locator('#trace-scores .result-card[data-metric="faithfulness"]')
    expect(card.locator(".big")).to_have_text("0.500")
    expect(card).to_contain_text(REASONING)
    expect(card).to_contain_text("judge scripted")
    # a viewer may not save: no save box, here or on the list
    expect(page.locator("#save-trace")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("null")  # nothing left out shows as text
    shoot(page, "dashboard-trace-en")
    page.get_by_label("Language").select_option("zh")
    expect(page.locator("h1")).to_have_text("链路 rag-query")
    expect(card).to_contain_text("评审模型的理由")
    expect(page.locator("#tr-docs")).to_have_text("检索到的文档")
    shoot(page, "dashboard-trace-zh")
    page.get_by_label("语言").select_option("en")
    page.goto(f"{server.url}/#/traces")
    expect(_rows(page)).to_have_count(REFUNDS + 2)
    expect(page.locator("#save-filtered")).to_have_count(0)
    expect(page.locator("input.pick-trace")).to_have_count(0)
    assert errors == []


def test_a_member_saves_traces_as_datasets(page: Page, served: Served, shoot: Shoot) -> None:
    server, keys, app_trace = served
    errors = page_errors(page)
    sign_in(page, server, keys["member"])
    page.goto(f"{server.url}/#/traces")
    expect(_rows(page)).to_have_count(REFUNDS + 2)
    picked = [app_trace, tid(503)]
    for trace_id in picked:
        page.locator(f'tr[data-trace="{trace_id}"] input.pick-trace').check()
    expect(page.locator("#save-picked")).to_have_text("Save the picked traces (2)")
    page.get_by_label("Dataset", exact=True).fill("picked-traces")
    page.locator("#save-picked").click()
    expect(page.locator("#tr-save-outcome")).to_contain_text("Saved 2 traces as picked-traces@1.")
    # the filtered list
    page.get_by_label("Service").fill("shop")
    expect(_rows(page)).to_have_count(REFUNDS)
    expect(page.locator("#save-filtered")).to_have_text(f"Save the filtered traces ({REFUNDS})")
    page.get_by_label("Dataset", exact=True).fill("refunds")
    page.locator("#save-filtered").click()
    expect(page.locator("#tr-save-outcome")).to_contain_text(
        f"Saved {REFUNDS} traces as refunds@1."
    )
    shoot(page, "dashboard-traces-saved-en")
    page.locator("#tr-save-outcome a").click()
    expect(page.locator("h1")).to_have_text("Dataset refunds")
    expect(page.locator("#rows-body caption")).to_have_text(f"{REFUNDS} rows")
    page.get_by_role("link", name="Datasets", exact=True).click()
    for name, count in (("picked-traces", 2), ("refunds", REFUNDS)):
        expect(page.locator(f'tr[data-dataset="{name}"] [data-col="rows"]')).to_have_text(
            str(count)
        )
    shoot(page, "dashboard-traces-datasets-en")
    with as_user(server, keys["member"]) as http:
        rows = data(http.get("/api/v2/serve/datasets/picked-traces/rows"))["items"]
    assert sorted(r["metadata"]["trace_id"] for r in rows) == sorted(picked)
    app_row = next(r for r in rows if r["metadata"]["trace_id"] == app_trace)
    assert app_row["query"] == QUESTION and app_row["retrieved_ids"] == [d[0] for d in DOCS]
    # one trace from its page, in Chinese
    page.goto(f"{server.url}/#/traces/{app_trace}")
    page.get_by_label("Language").select_option("zh")
    page.get_by_label("数据集", exact=True).fill("one-trace")
    page.locator("#save-trace").click()
    expect(page.locator("#tr-one-outcome")).to_contain_text("已将 1 条链路保存为 one-trace@1。")
    shoot(page, "dashboard-trace-saved-zh")
    page.get_by_label("语言").select_option("en")
    assert errors == []
