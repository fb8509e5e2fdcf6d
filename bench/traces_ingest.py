"""Production traces into ``ragmeter serve`` at a steady rate: OTLP/HTTP export requests
(protobuf, one RAG trace of three spans each: a chain with the question and answer, a
retriever with three documents, an LLM call with its model and tokens) sent open-loop at
``--rate`` traces/s for ``--seconds`` s to ``POST /v1/traces`` with an ingest key, while
online rules score them: deterministic metrics on every trace, a judged metric (the
scripted judge, ``--judge-ms`` per reply) on a ``--sample`` share.

Latency is timed from when a request was due, not when it left, so a late generator or a
slow server both show (no coordinated omission). A 503 (the receiver's queue is full) is
retried after its Retry-After, and a request whose connection broke is sent again, as OTLP
exporters do; both are counted. Afterwards the script waits
until every trace is stored and scored and reports: requests sent, accepted, refused, p50 /
p99 / max latency, the server's peak resident memory (its queue is bounded), traces stored,
and traces scored by each rule (each scores 5 s after a trace's last span, its stated delay).
Goal: at 200 traces/s for 60 s, nothing dropped and the queue bounded.

Run: ``.venv/bin/python bench/traces_ingest.py``; it rewrites its section of
``docs/benchmarks.md`` unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs
from _serve import KEY, free_port, start_server
from ragmeter.testing import ScriptedJudgeServer

WORDS = ["workflow", "agent", "index", "retrieval", "chunk", "prompt", "model", "rerank"]


def _attributes(values: dict[str, Any]) -> list[KeyValue]:
    out = []
    for key, value in values.items():
        if isinstance(value, bool):
            any_value = AnyValue(bool_value=value)
        elif isinstance(value, int):
            any_value = AnyValue(int_value=value)
        elif isinstance(value, float):
            any_value = AnyValue(double_value=value)
        else:
            any_value = AnyValue(string_value=str(value))
        out.append(KeyValue(key=key, value=any_value))
    return out


def _span(trace_id: bytes, span_id: bytes, parent: bytes, name: str, start: int, end: int,
          attributes: dict[str, Any]) -> Span:  # fmt: skip
    return Span(
        trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=name,
        kind=Span.SPAN_KIND_INTERNAL, start_time_unix_nano=start, end_time_unix_nano=end,
        attributes=_attributes(attributes), status=Status(code=Status.STATUS_CODE_OK),
    )  # fmt: skip


def trace_body(index: int, rng: random.Random, now_ns: int) -> bytes:
    """One export request holding one RAG trace (root last, as a batch exporter sends it)."""
    trace_id = rng.randbytes(16)
    root, retriever, llm = rng.randbytes(8), rng.randbytes(8), rng.randbytes(8)
    words = " ".join(rng.choice(WORDS) for _ in range(5))
    query = f"How does the {words} of part {index} work?"
    answer = f"Part {index} uses the {words} as the documents describe."
    documents: dict[str, Any] = {}
    for rank in range(3):
        prefix = f"retrieval.documents.{rank}.document"
        documents[f"{prefix}.id"] = f"doc-{index % 500}-{rank}"
        documents[f"{prefix}.content"] = f"The {words} of part {index}, section {rank}."
        documents[f"{prefix}.score"] = round(1.0 - rank * 0.1, 3)
    start = now_ns
    spans = [
        _span(trace_id, retriever, root, "retrieve", start + 1_000_000, start + 9_000_000,
              {"openinference.span.kind": "RETRIEVER", "input.value": query, **documents}),
        _span(trace_id, llm, root, "ChatCompletion", start + 10_000_000, start + 240_000_000,
              {"openinference.span.kind": "LLM", "llm.model_name": "bench-model",
               "llm.token_count.prompt": 180, "llm.token_count.completion": 24,
               "llm.input_messages.0.message.role": "user",
               "llm.input_messages.0.message.content": query,
               "llm.output_messages.0.message.role": "assistant",
               "llm.output_messages.0.message.content": answer}),
        _span(trace_id, root, b"", "rag", start, start + 250_000_000,
              {"openinference.span.kind": "CHAIN", "input.value": query, "output.value": answer,
               "session.id": f"s{index % 50}", "user.id": f"u{index % 20}"}),
    ]  # fmt: skip
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=_attributes({"service.name": "bench-rag"})),
                scope_spans=[ScopeSpans(spans=spans)],
            )
        ]
    )
    return request.SerializeToString()


@dataclass
class Tally:
    latency: list[float] = field(default_factory=list)
    accepted: int = 0
    refused: int = 0  # 503 answers (each retried)
    reconnected: int = 0  # requests sent again after a connection error, as exporters do
    errors: list[str] = field(default_factory=list)


async def send(http: httpx.AsyncClient, body: bytes, due: float, tally: Tally) -> None:
    """POST one export request, retrying a 503 after its Retry-After (as exporters do)."""
    loop = asyncio.get_running_loop()
    headers = {"Content-Type": "application/x-protobuf"}
    for _attempt in range(20):
        try:
            response = await http.post("/v1/traces", content=body, headers=headers)
        except httpx.TransportError:  # a kept-alive connection closed under it: exporters retry
            tally.reconnected += 1
            continue
        except httpx.HTTPError as exc:
            tally.errors.append(type(exc).__name__)
            return
        if response.status_code == 503:
            tally.refused += 1
            await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
            continue
        if response.status_code != 200:
            tally.errors.append(f"{response.status_code} {response.text[:200]}")
            return
        tally.latency.append(loop.time() - due)
        tally.accepted += 1
        return
    tally.errors.append("refused 20 times")


async def load(base: str, bodies: list[bytes], rate: float) -> tuple[Tally, float]:
    """Send ``bodies`` open-loop at ``rate`` per second; the tally and the seconds taken."""
    tally = Tally()
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    headers = {"Authorization": f"Bearer {KEY}"}
    loop = asyncio.get_running_loop()
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as http:
        start = loop.time()
        tasks = []
        for i, body in enumerate(bodies):
            due = start + i / rate
            if (delay := due - loop.time()) > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send(http, body, due, tally)))
        await asyncio.gather(*tasks)
        seconds = loop.time() - start
    return tally, seconds


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_scored(base: str, traces: int, timeout_s: float) -> tuple[dict[str, int], float]:
    """Poll until ``traces`` are stored and every rule has scored its share; the counts
    (stored, and traces scored per rule) and the seconds waited."""
    headers = {"Authorization": f"Bearer {KEY}"}
    started = time.monotonic()
    counts: dict[str, int] = {}
    with httpx.Client(base_url=f"{base}/api/v2/serve", headers=headers, timeout=30) as http:
        while time.monotonic() - started < timeout_s:
            page = http.get("/traces", params={"limit": 1}).json()["data"]
            rules = http.get("/online/rules").json()["data"]
            counts = {"stored": page["total"]}
            counts.update({r["rule"]["name"]: r["traces_scored"] for r in rules})
            if counts["stored"] >= traces and counts.get("every-trace", 0) >= traces:
                break
            time.sleep(1.0)
    return counts, time.monotonic() - started


SETTINGS = """
[models.scripted]
base_url = "{judge}"
model = "scripted"

[online]
max_queued_spans = 20000
score_every_seconds = 1

[[online.rules]]
name = "every-trace"
metrics = ["answered"]
delay_seconds = 5

[[online.rules]]
name = "judged-sample"
metrics = ["faithfulness"]
judge = "scripted"
sample_rate = {sample}
delay_seconds = 5
max_requests_per_day = 1000000
max_tokens_per_day = 1000000000
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0, help="traces per second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--sample", type=float, default=0.1, help="share judged")
    parser.add_argument("--judge-ms", type=float, default=50.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    count = int(args.rate * args.seconds)
    rng = random.Random(1)
    now_ns = time.time_ns()
    bodies = [trace_body(i, rng, now_ns + i * 5_000_000) for i in range(count)]
    with (
        ScriptedJudgeServer(latency_ms=args.judge_ms) as judge,
        tempfile.TemporaryDirectory(prefix="ragmeter-bench-") as tmp,
    ):
        port = free_port()
        settings = SETTINGS.format(judge=judge.url, sample=args.sample)
        server = start_server(Path(tmp), port, settings, wait_s=60)
        base = f"http://127.0.0.1:{port}"
        try:
            tally, seconds = asyncio.run(load(base, bodies, args.rate))
            counts, waited = wait_scored(base, count, timeout_s=600)
            peak = peak_rss_mb(server.pid)
            judged = judge.stats.get("chat_requests", 0)
        finally:
            server.terminate()
            server.wait(timeout=60)
    report(args, count, tally, seconds, counts, waited, peak, judged)


def report(args: argparse.Namespace, count: int, tally: Tally, seconds: float,
           counts: dict[str, int], waited: float, peak: float, judged: int) -> None:  # fmt: skip
    ms = sorted(v * 1000 for v in tally.latency) or [float("nan")]
    p50 = statistics.median(ms)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    dropped = count - counts.get("stored", 0)
    met = dropped == 0 and not tally.errors
    lines = [
        "| figure | value |",
        "|---|---:|",
        f"| traces sent (one export request each) | {count:,} in {seconds:.1f} s "
        f"({count / seconds:.0f}/s) |",
        f"| accepted / refused with 503 (retried) / sent again after a connection error / "
        f"errors | {tally.accepted:,} / {tally.refused:,} / {tally.reconnected:,} / "
        f"{len(tally.errors)} |",
        f"| latency p50 / p99 / max, ms | {p50:.1f} / {p99:.1f} / {ms[-1]:.1f} |",
        f"| traces stored (dropped) | {counts.get('stored', 0):,} ({dropped}) |",
        f"| scored by `every-trace` (deterministic) | {counts.get('every-trace', 0):,} |",
        f"| taken by `judged-sample` (a sampled {args.sample:.0%} judged) / judge requests | "
        f"{counts.get('judged-sample', 0):,} / {judged:,} |",
        f"| all stored and scored, s after the last request | {waited:.1f} |",
        f"| server's peak resident memory, MB | {peak:.0f} |",
    ]
    verdict = "met" if met else "NOT met"
    summary = (
        f"**{args.rate:.0f} traces/s for {args.seconds:.0f} s: p99 {p99:.1f} ms, {dropped} "
        f"dropped, peak queue bounded by `max_queued_spans` (goal: none dropped): {verdict}.**"
    )
    table = "\n".join(lines)
    print(summary, table, sep="\n")
    if tally.errors:
        print("errors:", *tally.errors[:10], sep="\n  ")
    if not args.no_write:
        intro = __doc__.split("\n\n")[0] + " " + __doc__.split("\n\n")[1]
        body = (
            f"{intro}\n\n{summary}\n\n{table}\n\n{machine_line('fastapi', 'uvicorn', 'protobuf')} "
            f"Loopback, one machine: the load generator, the scripted judge ({args.judge_ms:g} ms "
            "per reply) and the server share its 2 cores.\n"
        )
        write_section("traces_ingest", "Production traces in (OTLP/HTTP)", body)
    if not met:
        raise SystemExit(1)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
