"""Knowledge spaces: create, list, upload documents (multipart), list documents and chunks,
retrieve. A space is addressed by its id or its name."""

from __future__ import annotations

import asyncio
import tempfile
import threading
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, UploadFile, status
from pydantic import BaseModel, ConfigDict, Field

from ragmeter.embeddings import is_local_embedder
from ragmeter.errors import LimitError
from ragmeter.knowledge.chunking import ChunkingConfig
from ragmeter.knowledge.ingest import add_documents
from ragmeter.knowledge.models import (
    UPLOAD_ORIGIN,
    AddReport,
    ChunkInfo,
    DocumentInfo,
    Hit,
    RetrieverName,
    SpaceInfo,
)
from ragmeter.knowledge.readers import DOCUMENT_KINDS, DocumentLimits
from ragmeter.knowledge.search import SpaceSearcher
from ragmeter.service.envelope import ApiError, Result, ok
from ragmeter.service.schemas import AddOut, HitOut, Limit, Offset, Page
from ragmeter.service.state import Services, services
from ragmeter.service.uploads import save_uploads

__all__ = ["router"]

router = APIRouter(prefix="/spaces", tags=["knowledge"])
Deps = Annotated[Services, Depends(services)]


class SpaceCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    embedder: str | None = Field(default=None, description="default: the local MiniLM")
    chunking: ChunkingConfig | None = None


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=10_000)
    top_k: int = Field(default=5, ge=1, description="at most [server] max_top_k")
    score_threshold: float | None = None
    retriever: RetrieverName = "vector"


@router.post("", status_code=status.HTTP_201_CREATED)
def create_space(body: SpaceCreate, svc: Deps) -> Result[SpaceInfo]:
    """A new, empty space; its embedder and chunking are fixed from now on."""
    kwargs: dict[str, Any] = {"description": body.description, "chunking": body.chunking}
    if body.embedder:
        if not is_local_embedder(body.embedder):
            svc.app_policy.check_model(body.embedder, "embedder")
        kwargs["embedder"] = body.embedder
    return ok(svc.kb.create_space(body.name, **kwargs))


@router.get("")
def list_spaces(svc: Deps, offset: Offset = 0, limit: Limit = 1000) -> Result[list[SpaceInfo]]:
    """Spaces by name, at most ``limit`` of them from ``offset``."""
    return ok(svc.kb.spaces(offset, limit))


@router.get("/{space}")
def get_space(space: str, svc: Deps) -> Result[SpaceInfo]:
    return ok(svc.kb.space(space))


@router.delete("/{space}")
def delete_space(space: str, svc: Deps) -> Result[SpaceInfo]:
    """Remove a space with its documents, chunks and index files."""
    return ok(svc.kb.delete_space(space))


class _StopWhenStopping:
    """An upload's progress callback: counts stored chunks and, once the server is stopping,
    stops the upload at its next file or slice of embeddings (what was stored stays)."""

    def __init__(self, stopping: threading.Event) -> None:
        self.stopping = stopping
        self.chunks = 0

    def __call__(self, event: str, n: int) -> None:
        if event == "chunks":
            self.chunks += n
        if self.stopping.is_set() and event in ("file", "embedded", "chunks"):
            raise ApiError(
                503,
                "shutting_down",
                f"the server is stopping; {self.chunks} chunks of this upload were stored. "
                "Upload again when it is back: stored documents are skipped as unchanged",
            )


def _add(svc: Services, space: str, folder: Path) -> Any:
    limits = replace(DocumentLimits.from_server(svc.settings.server), stop=svc.stopping)
    progress = _StopWhenStopping(svc.stopping)
    return asyncio.run(
        add_documents(
            svc.kb, space, [folder], progress=progress, limits=limits, origin=UPLOAD_ORIGIN
        )
    )


def _failures(report: AddReport, folder: Path) -> list[tuple[str, str]]:
    """The failed files by their names in the upload, never the server's temporary folder."""
    root = str(folder.resolve())
    out: list[tuple[str, str]] = []
    for path, why in report.failed:
        try:
            name = Path(path).resolve().relative_to(root).as_posix()
        except ValueError:
            name = Path(path).name
        out.append((name, why.replace(root + "/", "").replace(root, "")))
    return out


@router.post("/{space}/documents")
async def upload_documents(
    space: str, svc: Deps, files: Annotated[list[UploadFile], File()]
) -> Result[AddOut]:
    """Add files (multipart field ``files``, md/txt/html/pdf). A file's name, a relative
    path, becomes its document name; an unchanged file is skipped, a changed one replaced.
    A file or upload over a ``[server]`` cap (characters, chunks, files) is refused whole."""
    info = await asyncio.to_thread(svc.kb.space, space)
    suffixes = set(DOCUMENT_KINDS)
    max_files = svc.settings.server.max_upload_files
    with tempfile.TemporaryDirectory(prefix="ragmeter-upload-") as tmp:
        folder = Path(tmp)
        await save_uploads(
            files, folder, max_bytes=svc.max_upload_bytes, suffixes=suffixes, max_files=max_files
        )
        report = await asyncio.to_thread(_add, svc, str(info.id), folder)
        failed = _failures(report, folder)
    fields = {**asdict(report), "failed": failed}
    out = AddOut.model_validate({k: fields[k] for k in AddOut.model_fields})
    if failed:
        reasons = "; ".join(f"{name}: {why}" for name, why in failed)
        raise ApiError(422, "unreadable_document", reasons, data=out.model_dump())
    return ok(out)


@router.get("/{space}/documents")
def list_documents(
    space: str, svc: Deps, offset: Offset = 0, limit: Limit = 1000
) -> Result[list[DocumentInfo]]:
    """A space's documents by name, at most ``limit`` of them from ``offset``; one added from
    the server's disk is ``local:NAME``, never its path."""
    return ok([document.public() for document in svc.kb.documents(space, offset, limit)])


@router.get("/{space}/chunks")
def list_chunks(
    space: str,
    svc: Deps,
    doc_name: str | None = None,
    offset: Offset = 0,
    limit: Limit = 100,
) -> Result[Page[ChunkInfo]]:
    """A page of the space's chunks, or of one document's (``doc_name`` resolves as in
    datasets: exact name, else a unique path suffix)."""
    if doc_name is None:
        chunks, total = svc.kb.space_chunks(space, offset, limit)
    else:
        every = svc.kb.document_chunks(space, doc_name)
        chunks, total = every[offset : offset + limit], len(every)
    return ok(Page[ChunkInfo](items=chunks, total=total, offset=offset, limit=limit))


async def _search(svc: Services, space: str, body: RetrieveRequest) -> list[Hit]:
    searcher = SpaceSearcher(svc.kb, space)
    try:
        hits = await searcher.search(
            [body.query],
            top_k=body.top_k,
            retriever=body.retriever,
            score_threshold=body.score_threshold,
        )
    finally:
        aclose = getattr(searcher.embedder, "aclose", None)
        if aclose is not None:
            await aclose()
    return hits[0]


@router.post("/{space}/retrieve")
async def retrieve(space: str, body: RetrieveRequest, svc: Deps) -> Result[list[HitOut]]:
    """The top_k chunks for a query, by the space's own embedder (vector), BM25 or hybrid."""
    cap = svc.settings.server.max_top_k
    if body.top_k > cap:
        raise LimitError(f"top_k {body.top_k} is more than {cap}", setting="[server] max_top_k")
    info = await asyncio.to_thread(svc.kb.space, space)
    hits = await asyncio.to_thread(lambda: asyncio.run(_search(svc, str(info.id), body)))
    return ok([HitOut.model_validate(h.to_dict()) for h in hits])
