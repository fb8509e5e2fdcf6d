"""Knowledge spaces in the store: create, find, list, remove; their documents and chunks."""

from __future__ import annotations

import difflib
import shutil
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from ragmeter.config import Settings, load_settings
from ragmeter.embeddings import DEFAULT_MODEL_NAME, is_local_embedder
from ragmeter.errors import ConfigError, NotFoundError, clip
from ragmeter.knowledge.chunking import ChunkingConfig
from ragmeter.knowledge.models import ChunkInfo, DocumentInfo, SpaceInfo
from ragmeter.store.db import Store, open_store
from ragmeter.store.lookup import add_named, by_name_or_id
from ragmeter.store.models import ChunkRecord, DocumentRecord, SpaceRecord
from ragmeter.store.names import check_name

__all__ = ["AmbiguousDocumentError", "KnowledgeBase", "UnknownDocumentError"]


class UnknownDocumentError(NotFoundError):
    """A ``doc_name`` matches no document of the space."""


class AmbiguousDocumentError(ConfigError):
    """A ``doc_name`` matches several documents; ``candidates`` lists them."""

    def __init__(self, message: str, candidates: Sequence[str]) -> None:
        super().__init__(message)
        self.candidates = list(candidates)


def _space_info(record: SpaceRecord, documents: int = 0, chunks: int = 0) -> SpaceInfo:
    return SpaceInfo(
        id=record.id,
        name=record.name,
        description=record.description,
        embedder=record.embedder,
        dimension=record.dimension,
        chunking=ChunkingConfig.model_validate(record.chunking),
        revision=record.revision,
        documents=documents,
        chunks=chunks,
        created_at=record.created_at,
        created_by=record.created_by,
    )


def _document_info(record: DocumentRecord) -> DocumentInfo:
    return DocumentInfo(
        id=record.id,
        space_id=record.space_id,
        name=record.name,
        kind=record.kind,
        size=record.size,
        chunk_count=record.chunk_count,
        content_hash=record.content_hash,
        source=record.source,
        updated_at=record.updated_at,
    )


class KnowledgeBase:
    """The knowledge spaces of one store. Adding documents and searching live in
    ``ragmeter.knowledge.ingest`` and ``ragmeter.knowledge.search``."""

    def __init__(self, store: Store | None = None, settings: Settings | None = None) -> None:
        self.settings = settings or load_settings()
        self.store = store or open_store(self.settings.store_url())

    def index_dir(self, space_id: int) -> Path:
        """Where a space's index files live, beside the store."""
        return self.store.files_dir / "spaces" / str(space_id)

    # -- spaces -----------------------------------------------------------------------------

    def create_space(
        self,
        name: str,
        *,
        embedder: str = DEFAULT_MODEL_NAME,
        chunking: ChunkingConfig | None = None,
        description: str = "",
    ) -> SpaceInfo:
        """A new, empty space. Its embedder and chunking cannot change later."""
        name = check_name(name, "knowledge space")
        if not is_local_embedder(embedder):
            self.settings.model(embedder, hint="to use it as the space's embedder")
        record = SpaceRecord(
            name=name,
            description=description,
            embedder=embedder,
            chunking=(chunking or ChunkingConfig()).model_dump(),
            revision=0,
        )
        add_named(self.store, record, "knowledge space")
        return _space_info(record)

    def _record(self, session: Session, space: str | int) -> SpaceRecord:
        return by_name_or_id(
            session,
            SpaceRecord,
            space,
            what="knowledge space",
            hint="ragmeter space create NAME",
        )

    def space(self, space: str | int) -> SpaceInfo:
        """A space by name or id, with its document and chunk counts."""
        with self.store.session() as session:
            record = self._record(session, space)
            documents, chunks = session.execute(
                select(
                    func.count(DocumentRecord.id),
                    func.coalesce(func.sum(DocumentRecord.chunk_count), 0),
                ).where(DocumentRecord.space_id == record.id)
            ).one()
            return _space_info(record, int(documents), int(chunks))

    def spaces(self, offset: int = 0, limit: int | None = None) -> list[SpaceInfo]:
        """Spaces by name with their counts; ``offset`` and ``limit`` page them."""
        with self.store.session() as session:
            counts = {
                space_id: (int(n), int(c or 0))
                for space_id, n, c in session.execute(
                    select(
                        DocumentRecord.space_id,
                        func.count(DocumentRecord.id),
                        func.sum(DocumentRecord.chunk_count),
                    ).group_by(DocumentRecord.space_id)
                )
            }
            query = select(SpaceRecord).order_by(SpaceRecord.name).offset(offset).limit(limit)
            records = session.scalars(query).all()
            return [_space_info(r, *counts.get(r.id, (0, 0))) for r in records]

    def delete_space(self, space: str | int) -> SpaceInfo:
        """Remove a space with its documents, chunks and index files."""
        with self.store.session() as session:
            record = self._record(session, space)
            info = _space_info(record)
            session.execute(delete(ChunkRecord).where(ChunkRecord.space_id == record.id))
            session.execute(delete(DocumentRecord).where(DocumentRecord.space_id == record.id))
            session.delete(record)
            session.commit()
        shutil.rmtree(self.index_dir(info.id), ignore_errors=True)
        return info

    # -- documents and chunks ---------------------------------------------------------------

    def documents(
        self, space: str | int, offset: int = 0, limit: int | None = None
    ) -> list[DocumentInfo]:
        """A space's documents by name; ``offset`` and ``limit`` page them."""
        with self.store.session() as session:
            record = self._record(session, space)
            rows = session.scalars(
                select(DocumentRecord)
                .where(DocumentRecord.space_id == record.id)
                .order_by(DocumentRecord.name)
                .offset(offset)
                .limit(limit)
            ).all()
            return [_document_info(r) for r in rows]

    def resolve_document(self, space: SpaceInfo, doc_name: str, names: Sequence[str]) -> str:
        """The document ``doc_name`` means among ``names``: the one whose name (its relative
        path) equals it, else the only one whose path ends with it."""
        if doc_name in names:
            return doc_name
        wanted = PurePosixPath(doc_name.replace("\\", "/").lstrip("/"))
        tail = wanted.parts
        matches = [n for n in names if PurePosixPath(n).parts[-len(tail) :] == tail] if tail else []
        if len(matches) == 1:
            return matches[0]
        if not matches:
            by_file = {n: PurePosixPath(n).name for n in names}
            near = difflib.get_close_matches(wanted.name, set(by_file.values()), n=3, cutoff=0.7)
            close = [n for n, file in by_file.items() if file in near or file == wanted.name][:5]
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownDocumentError(
                f"no document '{clip(doc_name)}' in space '{space.name}' ({len(names)} documents)"
                f"{hint}"
            )
        raise AmbiguousDocumentError(
            f"'{clip(doc_name)}' matches {len(matches)} documents of space '{space.name}': "
            f"{', '.join(sorted(matches)[:20])}{' ...' if len(matches) > 20 else ''}; "
            "give the relative path",
            sorted(matches),
        )

    def document_chunks(self, space: str | int, doc_name: str) -> list[ChunkInfo]:
        """The chunks of one document in order; ``doc_name`` resolves as in datasets."""
        info = self.space(space)
        names = [d.name for d in self.documents(info.id)]
        name = self.resolve_document(info, doc_name, names)
        chunks = self.chunks_of(info.id, [name])
        return chunks[name]

    def chunks_of(self, space_id: int, names: Sequence[str]) -> dict[str, list[ChunkInfo]]:
        """Chunks of each named document (exact names), in document order."""
        out: dict[str, list[ChunkInfo]] = {name: [] for name in names}
        with self.store.session() as session:
            for start in range(0, len(names), _BATCH):
                batch = list(names[start : start + _BATCH])
                where = (DocumentRecord.space_id == space_id) & DocumentRecord.name.in_(batch)
                for chunk in _chunks(session, where):
                    out[chunk.document].append(chunk)
        return out

    def space_chunks(
        self, space: str | int, offset: int = 0, limit: int = 100
    ) -> tuple[list[ChunkInfo], int]:
        """One page of a space's chunks (by document, then position) and how many it has."""
        info = self.space(space)
        with self.store.session() as session:
            chunks = _chunks(session, ChunkRecord.space_id == info.id, offset, limit)
        return chunks, info.chunks

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, ChunkInfo]:
        """Chunks by id, for turning search hits into texts."""
        unique = list(dict.fromkeys(int(i) for i in ids))
        out: dict[int, ChunkInfo] = {}
        with self.store.session() as session:
            for start in range(0, len(unique), _BATCH):
                where = ChunkRecord.id.in_(unique[start : start + _BATCH])
                out.update((chunk.id, chunk) for chunk in _chunks(session, where))
        return out


_BATCH = 500  # ids per IN (...) clause, well under every database's limit


def _chunks(
    session: Session, where: ColumnElement[bool], offset: int = 0, limit: int | None = None
) -> list[ChunkInfo]:
    rows = session.execute(
        select(
            ChunkRecord.id,
            DocumentRecord.name,
            ChunkRecord.position,
            ChunkRecord.content,
            ChunkRecord.meta,
        )
        .join(DocumentRecord, DocumentRecord.id == ChunkRecord.document_id)
        .where(where)
        .order_by(DocumentRecord.name, ChunkRecord.position)
        .offset(offset)
        .limit(limit)
    )
    return [
        ChunkInfo(id=i, document=d, position=p, content=c, meta=m or {}) for i, d, p, c, m in rows
    ]
