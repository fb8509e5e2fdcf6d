"""Knowledge spaces: documents -> chunks -> embeddings -> vector and BM25 indexes, searched
by vector, bm25 or hybrid retrieval.

Names load on first use: the chunking options cost nothing, the store (SQLAlchemy), FAISS and
the embedder load only for what needs them."""
