"""Knowledge spaces: documents -> chunks -> embeddings -> vector and BM25 indexes, searched
by vector, bm25 or hybrid retrieval.

Names load on first use: the chunking options cost nothing, the store (SQLAlchemy), FAISS and
the embedder load only for what needs them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names

if TYPE_CHECKING:
    from ragmeter.knowledge.chunking import (
        CHUNKING_STRATEGIES,
        ChunkDraft,
        ChunkingConfig,
        chunk_text,
    )
    from ragmeter.knowledge.ingest import add_documents, collect_sources
    from ragmeter.knowledge.models import (
        RETRIEVERS,
        UPLOAD_ORIGIN,
        AddReport,
        ChunkInfo,
        DocumentInfo,
        Hit,
        RetrieverName,
        SpaceInfo,
    )
    from ragmeter.knowledge.readers import (
        DOCUMENT_KINDS,
        DocumentLimits,
        DocumentReadError,
        read_document,
    )
    from ragmeter.knowledge.search import (
        SpaceSearcher,
        fuse_rrf,
        parse_retrievers,
    )
    from ragmeter.knowledge.spaces import (
        AmbiguousDocumentError,
        KnowledgeBase,
        UnknownDocumentError,
    )

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.knowledge.chunking": (
            "CHUNKING_STRATEGIES",
            "ChunkDraft",
            "ChunkingConfig",
            "chunk_text",
        ),
        "ragmeter.knowledge.ingest": ("add_documents", "collect_sources"),
        "ragmeter.knowledge.models": (
            "UPLOAD_ORIGIN",
            "RETRIEVERS",
            "AddReport",
            "ChunkInfo",
            "DocumentInfo",
            "Hit",
            "RetrieverName",
            "SpaceInfo",
        ),
        "ragmeter.knowledge.readers": (
            "DOCUMENT_KINDS",
            "DocumentLimits",
            "DocumentReadError",
            "read_document",
        ),
        "ragmeter.knowledge.search": (
            "SpaceSearcher",
            "fuse_rrf",
            "parse_retrievers",
        ),
        "ragmeter.knowledge.spaces": (
            "AmbiguousDocumentError",
            "KnowledgeBase",
            "UnknownDocumentError",
        ),
    },
)

__all__ = [
    "CHUNKING_STRATEGIES",
    "DOCUMENT_KINDS",
    "RETRIEVERS",
    "UPLOAD_ORIGIN",
    "AddReport",
    "AmbiguousDocumentError",
    "ChunkDraft",
    "ChunkInfo",
    "ChunkingConfig",
    "DocumentInfo",
    "DocumentLimits",
    "DocumentReadError",
    "Hit",
    "KnowledgeBase",
    "RetrieverName",
    "SpaceInfo",
    "SpaceSearcher",
    "UnknownDocumentError",
    "add_documents",
    "chunk_text",
    "collect_sources",
    "fuse_rrf",
    "parse_retrievers",
    "read_document",
]
