"""Production traces: the OTLP/HTTP receiver (``POST /v1/traces``, protobuf or JSON, gzip),
the list of traces, one trace with its span tree and scores, and traces saved as a dataset
version."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, status
from fastapi.responses import Response

from ragmeter.errors import LimitError, RagmeterError, TraceError, clip
from ragmeter.runs.storage.trace_flags import TraceFlag, TraceFlagStore
from ragmeter.runs.storage.traces import StoredTrace, TraceFilter
from ragmeter.service.envelope import Result, ok
from ragmeter.service.permissions import forbidden, request_user, require_owner
from ragmeter.service.schemas import Limit, Offset, Page
from ragmeter.service.state import Services, services
from ragmeter.store.names import check_name
from ragmeter.store.users import Role
from ragmeter.traces.otlp import JSON, decode_export, encode_response, encode_status, media_type
from ragmeter.traces.records import SpanRecord
from ragmeter.wire.traces import (
    SpanOut,
    TraceDetailOut,
    TraceFlagIn,
    TraceFlagOut,
    TraceOut,
    TraceScoreOut,
    TracesDatasetIn,
    TracesDatasetOut,
    TracesQuery,
)

__all__ = ["RECEIVER_PATH", "receiver", "request_cap", "router"]

#: where OTLP/HTTP exporters send traces (their default path)
RECEIVER_PATH = "/v1/traces"
#: what an exporter that found the queue full is told to wait, in seconds
RETRY_AFTER = 5

receiver = APIRouter()
router = APIRouter()
Deps = Annotated[Services, Depends(services)]


def request_cap(svc: Services) -> int:
    """Bytes of one export request as sent (``[online] max_request_mb``)."""
    return int(svc.settings.online.max_request_mb * 1_000_000)


async def _body(request: Request, cap: int) -> bytes:
    """The request's body read as it streams, refused (413) once past ``cap`` bytes (a
    declared length past it was refused before: ``middleware.BodyLimit``)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise LimitError(
                f"the request body is over {cap / 1_000_000:g} MB",
                setting="[online] max_request_mb",
                status=413,
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _otlp(body: bytes, status_code: int, content_type: str | None, **headers: str) -> Response:
    try:
        media = media_type(content_type)
    except TraceError:  # not an OTLP encoding: answered in JSON
        media = JSON
    return Response(body, status_code=status_code, media_type=media, headers=headers)


@receiver.post(RECEIVER_PATH, tags=["traces"], include_in_schema=False)
async def export_traces(request: Request, svc: Deps) -> Response:
    """OTLP/HTTP trace export: the spans are queued and stored in the background. Answers
    OTLP's ``ExportTraceServiceResponse`` (``partial_success`` when some spans were refused)
    or a ``google.rpc.Status``: 400 unreadable, 413 past a size cap (or more than the queue
    ever holds), 415 another content type or encoding, 503 with ``Retry-After`` when the
    queue is full."""
    content_type = request.headers.get("content-type")
    encoding = request.headers.get("content-encoding")
    try:
        body = await _body(request, request_cap(svc))
        decoded = await asyncio.to_thread(
            decode_export, body, content_type, encoding, svc.settings.online
        )
    except (LimitError, TraceError) as exc:  # past a cap (413), unreadable (400, 415)
        return _otlp(encode_status(str(exc), content_type), exc.status, content_type)
    queue = svc.span_queue
    never = queue.never_fits(len(decoded.spans), decoded.size)
    if never:  # an exporter retries a 503 forever: this one can never succeed
        return _otlp(encode_status(never, content_type, code=8), 413, content_type)
    spans, past_cap = queue.trace_room(decoded.spans, await _span_counts(svc, decoded.spans))
    if spans and not queue.offer(spans, decoded.size):
        full = queue.refusal(len(spans), decoded.size)
        message = f"{'the server is stopping' if queue.closed else full}; retry later"
        refused = encode_status(message, content_type, code=14)  # gRPC's UNAVAILABLE
        return _otlp(refused, 503, content_type, **{"Retry-After": str(RETRY_AFTER)})
    rejected = decoded.rejected + len(decoded.spans) - len(spans)
    why = "; ".join(m for m in (decoded.message, past_cap) if m) or None
    return _otlp(encode_response(rejected, why, content_type), 200, content_type)


async def _span_counts(svc: Services, spans: Sequence[SpanRecord]) -> dict[str, int]:
    """The spans the store keeps of each trace of ``spans``; none when it cannot say (the
    writer still leaves out spans past ``[online] max_spans_per_trace``, logged)."""
    try:
        ids = sorted({s.trace_id for s in spans})
        return await asyncio.to_thread(svc.span_queue.traces.span_counts, ids) if ids else {}
    except RagmeterError:
        return {}


def trace_out(found: StoredTrace, flags: tuple[TraceFlag, ...] = ()) -> TraceOut:
    record = found.record
    return TraceOut(
        trace_id=record.trace_id,
        name=record.name,
        service=record.service,
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        latency_ms=record.latency_ms,
        status=record.status,
        complete=record.complete,
        row=record.row,
        model=record.model,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        session_id=record.session_id,
        user_id=record.user_id,
        span_count=record.span_count,
        seq=found.seq,
        received_at=found.received_at,
        updated_at=found.updated_at,
        scores=[TraceScoreOut.model_validate(s, from_attributes=True) for s in found.scores],
        flags=len(flags),
        flag_labels=sorted({f.label for f in flags}),
    )


@router.get("/traces", tags=["traces"])
def list_traces(
    svc: Deps,
    query: Annotated[TracesQuery, Query()],
    offset: Offset = 0,
    limit: Limit = 50,
) -> Result[Page[TraceOut]]:
    """Traces newest first, each with its row fields and scores; filtered by service, root
    span name, status, completeness, start time (``since_ns`` <= start < ``until_ns``), a
    score of ``metric`` under ``below``, text in the query, session or user id, flagged by
    anyone (``flagged``) or with a label (``flag``)."""
    found, total = svc.traces.list(TraceFilter(**query.model_dump()), offset=offset, limit=limit)
    flags = _flags(svc).of_traces([t.record.trace_id for t in found])
    items = [trace_out(t, flags.get(t.record.trace_id, ())) for t in found]
    return ok(Page[TraceOut](items=items, total=total, offset=offset, limit=limit))


@router.get("/traces/{trace_id}", tags=["traces"])
def get_trace(trace_id: str, svc: Deps) -> Result[TraceDetailOut]:
    """A trace with its spans in tree order (``depth``), its scores and who flagged it."""
    detail = svc.traces.get(trace_id)
    flags = _flags(svc).of_trace(trace_id)
    spans = [
        SpanOut(
            span_id=span.span_id,
            parent_id=span.parent_id,
            depth=depth,
            name=span.name,
            kind=span.kind,
            start_ns=span.start_ns,
            end_ns=span.end_ns,
            status=span.status,
            status_message=span.status_message,
            attributes=span.attributes,
            resource=span.resource,
            events=list(span.events),
        )
        for depth, span in detail.spans
    ]
    out = TraceDetailOut(
        trace=trace_out(detail.trace, tuple(flags)),
        spans=spans,
        flags=[_flag_out(f) for f in flags],
    )
    return ok(out)


@router.post("/traces/dataset", tags=["traces"], status_code=status.HTTP_201_CREATED)
async def traces_to_dataset(
    request: Request, body: TracesDatasetIn, svc: Deps
) -> Result[TracesDatasetOut]:
    """Save the traces named (``trace_ids``) or those ``filters`` takes as dataset
    ``name``'s next version (or the version holding the same rows, ``reused``), each row's
    metadata naming its trace. A member adds versions only to a name whose versions they
    made."""
    name = check_name(body.name.strip(), "dataset")
    await require_owner(request, "dataset", name)
    filters = TraceFilter(**body.filters.model_dump()) if body.filters is not None else None
    record, new, count = await asyncio.to_thread(
        svc.traces.to_dataset,
        svc.runs,
        name,
        trace_ids=body.trace_ids,
        filters=filters,
        limit=body.limit,
    )
    out = TracesDatasetOut(
        name=name,
        version=record.version,
        dataset_id=record.id,
        content_hash=record.content_hash,
        rows=count,
        reused=not new,
    )
    return ok(out)


def _flags(svc: Services) -> TraceFlagStore:
    return TraceFlagStore(svc.traces.store)


def _flag_out(flag: TraceFlag) -> TraceFlagOut:
    return TraceFlagOut(
        trace_id=flag.trace_id,
        user=flag.user,
        label=flag.label,
        note=flag.note,
        created_at=flag.created_at,
    )


@router.put("/traces/{trace_id}/flag", tags=["traces"])
def flag_trace(
    trace_id: str, body: TraceFlagIn, request: Request, svc: Deps
) -> Result[TraceFlagOut]:
    """Flag a trace as the caller (a new flag replaces theirs): a label (``wrong``,
    ``good_example``, ``needs_review``, ``other``) and an optional note. 404 for a trace not
    kept."""
    user = request_user(request).name
    return ok(_flag_out(_flags(svc).put(trace_id, user, body.label, body.note)))


@router.delete("/traces/{trace_id}/flag", tags=["traces"])
def unflag_trace(
    trace_id: str,
    request: Request,
    svc: Deps,
    user: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> Result[bool]:
    """Remove the caller's flag on a trace (an admin removes ``user``'s); whether there was
    one. 404 for a trace not kept."""
    caller = request_user(request)
    whose = user if user is not None else caller.name
    if whose != caller.name and caller.role is not Role.ADMIN:
        raise forbidden(caller, f"remove the flag of '{clip(whose)}': a flag is its user's")
    return ok(_flags(svc).remove(trace_id, whose))
