"""Documents added to a space on a Ray cluster (``ragmeter space add ... --executor ray``):
this process reads the files and skips those unchanged (their content hash is stored), then
sends the others in batches of about ``FILES_PER_TASK`` files to Ray tasks, which read,
chunk and embed them with the same code as a local add (``prepare_document``,
``embed_texts``, the space's embedder by name). Each batch's documents and vectors come back
to this process, which stores them as they finish (one transaction each; workers never
write), so a crash loses only the batches not back yet and a second add skips what was
stored. The files' bytes travel with the task: the workers need no shared file system.

``ray`` is imported by this module only: it is loaded when the Ray executor is chosen."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import ray

from ragmeter.config import Settings
from ragmeter.embeddings import embedder_by_name, is_local_embedder
from ragmeter.errors import ConfigError, RagmeterError
from ragmeter.knowledge.ingest import (
    PreparedDocument,
    ProgressEvent,
    SourceFile,
    embed_texts,
    known_documents,
    prepare_document,
    read_source,
    store_prepared,
)
from ragmeter.knowledge.models import AddReport, SpaceInfo
from ragmeter.knowledge.readers import DocumentLimits
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.runs.execution.ray_executor import TASK_RETRIES, connect

__all__ = ["FILES_PER_TASK", "RayIngester"]

#: files per Ray task: enough that loading the embedder in the worker is a small share
FILES_PER_TASK = 32

#: one file of a task: the source, its bytes and the stored document it replaces (id, hash)
_File = tuple[SourceFile, bytes, tuple[int, str] | None]


async def _prepare_here(
    space: SpaceInfo, files: list[_File], settings: Settings, origin: str | None
) -> tuple[list[PreparedDocument], np.ndarray | None, AddReport]:
    report = AddReport()
    limits = DocumentLimits()
    prepared = [
        item
        for source, data, existing in files
        if (item := prepare_document(space, source, data, existing, report, limits, origin))
    ]
    texts = [d.content for item in prepared for d in item.drafts]
    if not texts:
        return prepared, None, report
    embedder = embedder_by_name(space.embedder, settings=settings)
    try:
        vectors = await embed_texts(embedder, texts)
    finally:
        aclose = getattr(embedder, "aclose", None)
        if aclose is not None:
            await aclose()
    return prepared, vectors, report


@ray.remote(max_retries=TASK_RETRIES)
def _prepare_remote(
    space: SpaceInfo, files: list[_File], settings: Settings, origin: str | None
) -> tuple[list[PreparedDocument], np.ndarray | None, AddReport]:
    """One batch of files read, chunked and embedded in a Ray worker."""
    return asyncio.run(_prepare_here(space, files, settings, origin))


def _result(ref: Any) -> tuple[list[PreparedDocument], np.ndarray | None, AddReport]:
    """A task's result; our own error raised in the worker (an embedding device without a
    GPU, say) comes back as itself, its message without the worker's traceback."""
    try:
        result: tuple[list[PreparedDocument], np.ndarray | None, AddReport] = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, RagmeterError):
            raise exc.cause from None
        raise
    return result


def _gpus_per_task(settings: Settings, space: SpaceInfo, cluster_gpus: float) -> float:
    """GPUs each task reserves: ``[executor] gpus_per_task`` when the space embeds with the
    local model on ``cuda``, else none. A cluster with fewer GPUs than one task reserves is
    a ConfigError, told now: Ray would keep such a task waiting for ever."""
    if settings.knowledge.device != "cuda" or not is_local_embedder(space.embedder):
        return 0.0
    wanted = settings.executor.gpus_per_task
    if cluster_gpus < wanted:
        raise ConfigError(
            f"device 'cuda': each Ray task reserves {wanted:g} GPU ([executor] gpus_per_task) "
            f"and the cluster has {cluster_gpus:g}; add a node with a GPU, or use "
            'device = "cpu" or "auto"'
        )
    return wanted


def _merge(into: AddReport, other: AddReport) -> None:
    into.unchanged += other.unchanged
    into.empty += other.empty
    into.failed += other.failed


class RayIngester:
    """Adds documents through Ray tasks of ``files`` files, at most ``max_in_flight`` at
    once (default: the cluster's CPUs)."""

    def __init__(
        self,
        *,
        address: str | None = None,
        files: int = FILES_PER_TASK,
        max_in_flight: int | None = None,
    ) -> None:
        self.address = address
        self.files = files
        self.max_in_flight = max_in_flight

    async def add(
        self,
        kb: KnowledgeBase,
        info: SpaceInfo,
        sources: Sequence[SourceFile],
        report: AddReport,
        notify: ProgressEvent,
        origin: str | None,
    ) -> SpaceInfo:
        await asyncio.to_thread(connect, self.address)
        known = known_documents(kb, info)
        batches = _read(sources, known, report, notify, self.files)
        resources = ray.cluster_resources()  # type: ignore[no-untyped-call]
        limit = self.max_in_flight or max(1, int(resources.get("CPU", 1)))
        gpus = _gpus_per_task(kb.settings, info, float(resources.get("GPU", 0)))
        task = _prepare_remote.options(num_gpus=gpus) if gpus else _prepare_remote
        running: dict[Any, int] = {}
        try:
            while batches or running:
                while batches and len(running) < limit:
                    files = batches.pop(0)
                    ref = task.remote(info, files, kb.settings, origin)
                    running[ref] = len(files)
                done, _ = await asyncio.to_thread(
                    ray.wait, list(running), num_returns=1, timeout=1.0
                )
                for ref in done:
                    count = running.pop(ref)
                    prepared, vectors, found = await asyncio.to_thread(_result, ref)
                    _merge(report, found)
                    if prepared and vectors is not None:
                        info = await asyncio.to_thread(
                            store_prepared, kb, info, prepared, vectors, report, notify
                        )
                    notify("file", count)
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
        return info


def _read(
    sources: Sequence[SourceFile],
    known: dict[str, tuple[int, str]],
    report: AddReport,
    notify: ProgressEvent,
    size: int,
) -> list[list[_File]]:
    """The files to send, in batches of ``size``, with their bytes; unreadable ones are
    counted as failed and unchanged ones (same content hash) as unchanged here."""
    files: list[_File] = []
    for source in sources:
        data = read_source(source, report, notify)
        if data is None:
            continue
        existing = known.get(source.name)
        if existing is not None and existing[1] == hashlib.sha256(data).hexdigest():
            report.unchanged.append(source.name)
            notify("file", 1)
            continue
        files.append((source, data, existing))
    return [files[i : i + size] for i in range(0, len(files), size)]
