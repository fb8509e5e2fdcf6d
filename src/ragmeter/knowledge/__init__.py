"""Knowledge spaces: documents -> chunks -> embeddings -> vector and BM25 indexes, searched
by vector, bm25 or hybrid retrieval."""

from ragmeter.knowledge.chunking import CHUNKING_STRATEGIES, ChunkDraft, ChunkingConfig, chunk_text
from ragmeter.knowledge.ingest import add_documents, collect_sources
from ragmeter.knowledge.models import (
    UPLOAD_ORIGIN,
    AddReport,
    ChunkInfo,
    DocumentInfo,
    Hit,
    SpaceInfo,
)
from ragmeter.knowledge.readers import (
    DOCUMENT_KINDS,
    DocumentLimits,
    DocumentReadError,
    read_document,
)
from ragmeter.knowledge.search import (
    RETRIEVERS,
    RetrieverName,
    SpaceSearcher,
    fuse_rrf,
    parse_retrievers,
)
from ragmeter.knowledge.spaces import AmbiguousDocumentError, KnowledgeBase, UnknownDocumentError

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
