"""Ingestion throughput: ``add_documents`` (read, hash, chunk, embed, store in SQLite, build the
FAISS and BM25 indexes) vs calling sentence-transformers' ``encode`` directly on the same
chunks, in one process, all-MiniLM-L6-v2 on the CPU. ragmeter embeds with its own numpy
forward pass of the model (no torch); its embedder alone is timed too.

The corpus is DB-GPT's English docs under ``awel/`` and ``application/``. The chunks the
direct side encodes are the ones ragmeter's chunker makes (chunking them is not timed for it).
Both sides use batch size 32 and normalised embeddings. The sides take turns, several rounds,
into a fresh store each round; the ratio is taken on each side's best round.

Run: ``.venv/bin/python bench/ingestion.py``; it rewrites its section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _corpus import dbgpt_docs  # bench/ is on sys.path when the script runs
from _report import machine_line, write_section
from ragmeter.embeddings import LocalEmbedder
from ragmeter.embeddings.local import default_model_path
from ragmeter.knowledge.chunking import ChunkingConfig, chunk_text
from ragmeter.knowledge.ingest import add_documents, collect_sources
from ragmeter.knowledge.readers import read_document
from ragmeter.knowledge.spaces import KnowledgeBase

FOLDERS = ("awel", "application")
GOAL = 0.8


def corpus(work: Path) -> Path:
    """Copy the chosen folders (relative paths kept) into ``work``."""
    source = dbgpt_docs() / "en"
    target = work / "corpus"
    for folder in FOLDERS:
        shutil.copytree(source / folder, target / folder)
    return target


def chunks_of(folder: Path) -> list[str]:
    sources, _ = collect_sources([folder])
    config = ChunkingConfig()
    return [c.content for s in sources for c in chunk_text(read_document(s.path), config)]


def ours(folder: Path, work: Path, round_: int) -> tuple[float, int]:
    os.environ["RAGMETER_HOME"] = str(work / f"home{round_}")
    kb = KnowledgeBase()
    kb.create_space("bench")
    started = time.perf_counter()
    report = asyncio.run(add_documents(kb, "bench", [folder], embedder=LocalEmbedder()))
    return time.perf_counter() - started, report.chunks


@functools.cache
def sentence_transformer() -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True)


def direct(texts: list[str]) -> float:
    model = sentence_transformer()
    started = time.perf_counter()
    model.encode(
        texts,
        batch_size=32,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return time.perf_counter() - started


def embedder_alone(texts: list[str]) -> float:
    embedder = LocalEmbedder()
    started = time.perf_counter()
    embedder.embed_sync(texts)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = corpus(work)
        texts = chunks_of(folder)
        files = len(collect_sources([folder])[0])
        print(f"{files} files, {len(texts)} chunks")
        direct(texts[:64])  # load the models and warm up the sides' kernels
        embedder_alone(texts[:64])
        times: dict[str, list[float]] = {"ragmeter": [], "direct": [], "embedder": []}
        for round_ in range(args.rounds):
            seconds, stored = ours(folder, work, round_)
            if stored != len(texts):
                raise SystemExit(f"ragmeter stored {stored} chunks, the chunker made {len(texts)}")
            times["ragmeter"].append(seconds)
            times["direct"].append(direct(texts))
            times["embedder"].append(embedder_alone(texts))
            print(
                f"round {round_ + 1}: ragmeter {seconds:.1f}s, direct {times['direct'][-1]:.1f}s, "
                f"embedder alone {times['embedder'][-1]:.1f}s"
            )
    rate = {side: len(texts) / min(values) for side, values in times.items()}
    median = {side: len(texts) / statistics.median(values) for side, values in times.items()}
    ratio = rate["ragmeter"] / rate["direct"]
    rows = [
        "| side | best s | chunks/s (best) | chunks/s (median) |",
        "|---|---:|---:|---:|",
        f"| ragmeter `add_documents` (read, chunk, embed, SQLite, FAISS + BM25) "
        f"| {min(times['ragmeter']):.1f} | {rate['ragmeter']:.1f} | {median['ragmeter']:.1f} |",
        f"| sentence-transformers `encode` alone | {min(times['direct']):.1f} "
        f"| {rate['direct']:.1f} | {median['direct']:.1f} |",
        f"| ragmeter's local embedder alone (numpy) | {min(times['embedder']):.1f} "
        f"| {rate['embedder']:.1f} | {median['embedder']:.1f} |",
    ]
    verdict = "met" if ratio >= GOAL else "not met"
    body = "\n".join(
        [
            f"DB-GPT's English docs under {', '.join(f'`{f}/`' for f in FOLDERS)}: {files} files, "
            f"{len(texts)} chunks (markdown headers, 512/50). all-MiniLM-L6-v2 on the CPU, batch "
            f"size 32, {args.rounds} rounds taking turns, a fresh store each round.",
            "",
            *rows,
            "",
            f"**Goal: ragmeter's ingestion at least {GOAL}x the throughput of encoding alone. "
            f"Measured: {ratio:.2f}x ({verdict}).**",
            "",
            machine_line("numpy", "torch", "sentence-transformers", "faiss-cpu", "bm25s"),
        ]
    )
    write_section("ingestion", "Ingestion throughput vs sentence-transformers alone", body)


if __name__ == "__main__":
    main()
