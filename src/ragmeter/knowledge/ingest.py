"""Adding documents to a space: read, hash, chunk, embed in large batches, store a batch of
documents per transaction, then rebuild the indexes once.

A document whose content hash is unchanged is skipped; a changed one is re-chunked. A file
that fails is reported with its reason and never stops the others; a crash loses at most
the batch being embedded (run ``add`` again to finish). ``DocumentLimits`` cap what a call
may cost (the service's uploads); a document or call over a cap is a ``LimitError`` raised
before anything is stored.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ragmeter.embeddings import Embedder, embedder_by_name, normalize_rows
from ragmeter.errors import (
    ConfigError,
    ConflictError,
    EmbeddingError,
    LimitError,
    RagmeterError,
    StoreError,
)
from ragmeter.knowledge.chunking import ChunkDraft, chunk_text
from ragmeter.knowledge.indexes import rebuild_indexes
from ragmeter.knowledge.models import AddReport, SpaceInfo
from ragmeter.knowledge.readers import (
    DocumentLimits,
    ReadingBudget,
    document_kind,
    read_document,
)
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.store.models import ChunkRecord, DocumentRecord, SpaceRecord

__all__ = [
    "Ingester",
    "PreparedDocument",
    "ProgressEvent",
    "SourceFile",
    "add_documents",
    "collect_sources",
    "embed_texts",
    "known_documents",
    "prepare_document",
    "read_source",
    "store_prepared",
]

#: chunks embedded per call; large enough that the embedder's own batching is efficient
EMBED_BATCH = 512
#: a document's chunks may hold this many times its characters (overlap and header paths
#: repeat text); beyond it a chunking setting is amplifying the document
CHUNK_TEXT_FACTOR = 4

#: ``(event, n)``: ``files_total``, ``file``, ``chunks_total``, ``embedded`` (texts of a
#: batch embedded so far), ``chunks`` (stored), ``indexing``
ProgressEvent = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to add and the document name it gets."""

    name: str
    path: Path


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def collect_sources(paths: Sequence[Path]) -> tuple[list[SourceFile], AddReport]:
    """Files under ``paths`` (folders recursively, hidden ones skipped), named by their path
    relative to the folder given, or by their file name when given directly."""
    report = AddReport()
    sources: dict[str, SourceFile] = {}
    for given in paths:
        if given.is_dir():
            found = sorted(p for p in given.rglob("*") if p.is_file() and not _hidden(p, given))
            candidates = []
            for path in found:
                if document_kind(path) is None:
                    report.skipped.append(str(path))
                else:
                    candidates.append(SourceFile(path.relative_to(given).as_posix(), path))
        elif given.is_file():
            if document_kind(given) is None:
                report.failed.append((str(given), "unsupported file type (md, txt, html, pdf)"))
                continue
            candidates = [SourceFile(given.name, given)]
        else:
            report.failed.append((str(given), "no such file or folder"))
            continue
        for source in candidates:
            other = sources.get(source.name)
            if other is not None:
                report.failed.append(
                    (str(source.path), f"name '{source.name}' is already taken by {other.path}")
                )
            else:
                sources[source.name] = source
    return list(sources.values()), report


@dataclass(slots=True)
class PreparedDocument:
    """A file read and chunked, to be embedded and stored (in place of document
    ``existing_id`` when it changed)."""

    source: SourceFile
    kind: str
    digest: str
    size: int
    drafts: list[ChunkDraft]
    existing_id: int | None
    #: what the document records as where it came from
    origin: str


def _chunks(text: str, name: str, space: SpaceInfo, limits: DocumentLimits) -> list[ChunkDraft]:
    """The document's chunks; LimitError when they are more, or hold more text, than allowed."""
    cap, chars = limits.max_document_chunks, limits.max_document_chars
    budget = None if chars is None else chars * CHUNK_TEXT_FACTOR
    drafts = chunk_text(text, space.chunking, max_chunks=cap, max_chars=budget)
    if cap is not None and len(drafts) > cap:
        raise LimitError(
            f"{name}: cut into more than {cap} chunks",
            setting=limits.setting("max_document_chunks"),
            status=413,
        )
    if budget is not None and sum(len(d.content) for d in drafts) > budget:
        raise LimitError(
            f"{name}: its chunks would hold more than {budget} characters ({CHUNK_TEXT_FACTOR} "
            f"times the cap; chunk overlap and header paths repeat text)",
            setting=limits.setting("max_document_chars"),
            status=413,
        )
    return drafts


def known_documents(kb: KnowledgeBase, space: SpaceInfo) -> dict[str, tuple[int, str]]:
    with kb.store.session() as session:
        rows = session.execute(
            select(DocumentRecord.id, DocumentRecord.name, DocumentRecord.content_hash).where(
                DocumentRecord.space_id == space.id
            )
        )
        return {name: (doc_id, digest) for doc_id, name, digest in rows}


def read_source(source: SourceFile, report: AddReport, progress: ProgressEvent) -> bytes | None:
    """The file's bytes; None when it cannot be read (then counted as failed, with why)."""
    try:
        return source.path.read_bytes()
    except OSError as exc:
        report.failed.append((str(source.path), exc.strerror or str(exc)))
        progress("file", 1)
        return None


def _prepare(
    kb: KnowledgeBase,
    space: SpaceInfo,
    sources: Sequence[SourceFile],
    report: AddReport,
    progress: ProgressEvent,
    limits: DocumentLimits,
    origin: str | None,
) -> list[PreparedDocument]:
    known = known_documents(kb, space)
    budget = ReadingBudget(limits)
    pending: list[PreparedDocument] = []
    total = 0
    for source in sources:
        data = read_source(source, report, progress)
        if data is None:
            continue
        try:
            item = prepare_document(
                space, source, data, known.get(source.name), report, limits, origin, budget
            )
        finally:
            progress("file", 1)
        if item is not None:
            pending.append(item)
            total += len(item.drafts)
            if limits.max_upload_chunks is not None and total > limits.max_upload_chunks:
                raise LimitError(
                    f"these documents would add more than {limits.max_upload_chunks} chunks",
                    setting=limits.setting("max_upload_chunks"),
                    status=413,
                )
    return pending


def prepare_document(
    space: SpaceInfo,
    source: SourceFile,
    data: bytes,
    existing: tuple[int, str] | None,
    report: AddReport,
    limits: DocumentLimits,
    origin: str | None,
    budget: ReadingBudget | None = None,
) -> PreparedDocument | None:
    """One file's document with its chunks, or None when it is unchanged (``existing``: the
    stored document's id and content hash), empty or unreadable (``report`` says which and
    why). A cap (``limits``) refuses with ``LimitError``."""
    digest = hashlib.sha256(data).hexdigest()
    if existing is not None and existing[1] == digest:
        report.unchanged.append(source.name)
        return None
    budget = budget or ReadingBudget(limits)
    try:
        text = read_document(source.path, data, limits=limits, name=source.name, budget=budget)
        drafts = _chunks(text, source.name, space, limits)
    except LimitError:
        raise  # a cap refuses the whole call, before anything is stored
    except RagmeterError as exc:
        report.failed.append((str(source.path), str(exc).removeprefix(f"{source.name}: ")))
        return None
    if not drafts:
        report.empty.append(source.name)
        return None
    kind = document_kind(source.path) or "txt"
    existing_id = existing[0] if existing is not None else None
    where = f"{origin}:{source.name}" if origin else str(source.path.resolve())
    return PreparedDocument(source, kind, digest, len(data), drafts, existing_id, where)


def _batches(pending: Sequence[PreparedDocument]) -> Iterator[list[PreparedDocument]]:
    batch: list[PreparedDocument] = []
    size = 0
    for item in pending:
        batch.append(item)
        size += len(item.drafts)
        if size >= EMBED_BATCH:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _insert_document(
    session: Session, space: SpaceInfo, name: str, values: dict[str, object]
) -> int:
    """A new document's id; ConflictError (the batch is not stored) when another call added
    a document of that name since this one looked."""
    record = DocumentRecord(space_id=space.id, name=name, **values)
    session.add(record)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise ConflictError(
            f"document '{name}' was added to space '{space.name}' by another upload at the "
            "same time; this upload stopped before storing it (upload again: documents "
            "already stored are skipped as unchanged)"
        ) from None
    return record.id


def _store_batch(
    kb: KnowledgeBase, space: SpaceInfo, batch: Sequence[PreparedDocument], vectors: np.ndarray
) -> None:
    """One transaction: replace or insert each document with its chunks; bump the revision."""
    rows: list[dict[str, object]] = []
    offset = 0
    with kb.store.session() as session:
        for item in batch:
            values = {
                "source": item.origin,
                "kind": item.kind,
                "content_hash": item.digest,
                "size": item.size,
                "chunk_count": len(item.drafts),
            }
            if item.existing_id is not None:
                doc_id = item.existing_id
                session.execute(delete(ChunkRecord).where(ChunkRecord.document_id == doc_id))
                session.execute(
                    update(DocumentRecord).where(DocumentRecord.id == doc_id).values(**values)
                )
            else:
                doc_id = _insert_document(session, space, item.source.name, values)
            for position, draft in enumerate(item.drafts):
                rows.append(
                    {
                        "space_id": space.id,
                        "document_id": doc_id,
                        "position": position,
                        "content": draft.content,
                        "meta": draft.meta,
                        "embedding": vectors[offset + position].tobytes(),
                    }
                )
            offset += len(item.drafts)
        session.execute(insert(ChunkRecord), rows)
        session.execute(
            update(SpaceRecord)
            .where(SpaceRecord.id == space.id)
            .values(revision=SpaceRecord.revision + 1, dimension=int(vectors.shape[1]))
        )
        session.commit()


async def _embed(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts`` (an embedder passed in by a user may not normalise)."""
    try:
        return normalize_rows(await embedder.embed(texts))
    except RagmeterError:
        raise
    except Exception as exc:  # torch and HTTP clients raise many kinds
        raise EmbeddingError(f"embedding chunks failed: {exc}") from exc


async def _embed_in_slices(
    embedder: Embedder, texts: list[str], notify: ProgressEvent
) -> np.ndarray:
    """Vectors of a batch's texts, ``EMBED_BATCH`` at a time, so progress (and a stop) comes
    between slices even when one large document makes a large batch."""
    parts: list[np.ndarray] = []
    for start in range(0, len(texts), EMBED_BATCH):
        parts.append(await _embed(embedder, texts[start : start + EMBED_BATCH]))
        notify("embedded", len(parts[-1]))
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


async def embed_texts(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts``, ``EMBED_BATCH`` at a time (what a batch of documents is
    embedded with, here or in a cluster's worker)."""
    return await _embed_in_slices(embedder, texts, lambda _event, _n: None)


class Ingester(Protocol):
    """Reads, chunks and embeds documents somewhere other than this process (a cluster),
    with ``prepare_document`` and ``embed_texts``; this process stores each batch as it comes
    back (``store_prepared``), so a crash loses only the batches not back yet."""

    async def add(
        self,
        kb: KnowledgeBase,
        info: SpaceInfo,
        sources: Sequence[SourceFile],
        report: AddReport,
        notify: ProgressEvent,
        origin: str | None,
    ) -> SpaceInfo:
        """Add ``sources`` to space ``info``; the space as it is after."""
        ...


async def _embed_and_store(
    kb: KnowledgeBase,
    info: SpaceInfo,
    pending: Sequence[PreparedDocument],
    embedder: Embedder,
    report: AddReport,
    notify: ProgressEvent,
) -> SpaceInfo:
    for batch in _batches(pending):
        texts = [d.content for item in batch for d in item.drafts]
        vectors = await _embed_in_slices(embedder, texts, notify)
        info = store_prepared(kb, info, batch, vectors, report, notify)
    return info


def store_prepared(
    kb: KnowledgeBase,
    info: SpaceInfo,
    batch: Sequence[PreparedDocument],
    vectors: np.ndarray,
    report: AddReport,
    notify: ProgressEvent,
) -> SpaceInfo:
    """Store a batch of documents with their chunks' vectors (one transaction) and count it
    in ``report``; the space as it is after."""
    if info.dimension is not None and vectors.shape[1] != info.dimension:
        raise EmbeddingError(
            f"embedder '{info.embedder}' gave {vectors.shape[1]}-d vectors; "
            f"space '{info.name}' holds {info.dimension}-d ones"
        )
    _store_batch(kb, info, batch, vectors)
    for item in batch:
        done = report.updated if item.existing_id is not None else report.added
        done.append(item.source.name)
    chunks = sum(len(item.drafts) for item in batch)
    report.chunks += chunks
    notify("chunks", chunks)
    return info.model_copy(update={"dimension": int(vectors.shape[1])})


async def add_documents(
    kb: KnowledgeBase,
    space: str | int,
    paths: Sequence[Path],
    *,
    embedder: Embedder | None = None,
    progress: ProgressEvent | None = None,
    limits: DocumentLimits | None = None,
    origin: str | None = None,
    ingester: Ingester | None = None,
) -> AddReport:
    """Add files and folders to a space; see the module docstring. ``origin`` is what the
    documents record as their source instead of their file's path (``upload``: an upload's
    files live in a temporary folder). ``progress`` may raise to stop between files and
    after a stored batch; what was stored stays. ``ingester`` reads, chunks and embeds them
    elsewhere (a Ray cluster); it takes no ``limits`` (a call's caps are the service's)."""
    started = time.perf_counter()
    notify: ProgressEvent = progress or (lambda _event, _n: None)
    info = kb.space(space)
    sources, report = collect_sources(paths)
    notify("files_total", len(sources))
    if ingester is not None:
        if limits is not None or embedder is not None:
            raise ConfigError("documents added elsewhere take no limits or embedder object")
        info = await ingester.add(kb, info, sources, report, notify, origin)
        pending: list[PreparedDocument] = []
    else:
        pending = _prepare(kb, info, sources, report, notify, limits or DocumentLimits(), origin)
        notify("chunks_total", sum(len(p.drafts) for p in pending))
    if pending:
        own = embedder is None
        active = embedder or embedder_by_name(info.embedder, settings=kb.settings)
        try:
            info = await _embed_and_store(kb, info, pending, active, report, notify)
        finally:
            aclose = getattr(active, "aclose", None)
            if own and aclose is not None:
                await aclose()
    if report.changed or not (kb.index_dir(info.id) / "index.json").exists():
        notify("indexing", 0)
        try:
            rebuild_indexes(
                kb.store,
                info.id,
                kb.index_dir(info.id),
                hnsw_threshold=kb.settings.knowledge.hnsw_threshold,
            )
        except OSError as exc:
            raise StoreError(f"cannot write the index of space '{info.name}': {exc}") from exc
    report.seconds = time.perf_counter() - started
    return report
