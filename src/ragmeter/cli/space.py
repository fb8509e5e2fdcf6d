"""``ragmeter space``: create knowledge spaces, add documents, look at chunks, search."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragmeter._sync import run_sync
from ragmeter.cli._common import console, err_console, handles_errors, validation_message
from ragmeter.embeddings import DEFAULT_MODEL_NAME
from ragmeter.errors import ConfigError
from ragmeter.knowledge.chunking import CHUNKING_STRATEGIES

if TYPE_CHECKING:
    from ragmeter.config import Settings
    from ragmeter.knowledge.ingest import Ingester
    from ragmeter.knowledge.models import AddReport
    from ragmeter.knowledge.spaces import KnowledgeBase


__all__ = ["add_with_progress", "space_app"]

space_app = typer.Typer(
    name="space",
    help="Knowledge spaces: documents -> chunks -> vector and BM25 indexes.",
    no_args_is_help=True,
)


def _unescape(text: str) -> str:
    """Let ``--separator '\\n\\n'`` mean two newlines, as users type it in a shell."""
    return text.replace("\\n", "\n").replace("\\t", "\t")


def _kb() -> KnowledgeBase:
    """This home's knowledge base. The store, the indexes and the embedder are imported inside
    the commands, so each command loads only what it uses."""
    from ragmeter.knowledge.spaces import KnowledgeBase

    return KnowledgeBase()


@space_app.command("create")
@handles_errors
def create_command(
    name: Annotated[str, typer.Argument(help="Name of the new space.")],
    embedder: Annotated[
        str, typer.Option(help="Embedding model: the local default or a \\[models.NAME].")
    ] = DEFAULT_MODEL_NAME,
    chunking: Annotated[
        str, typer.Option(help=f"Chunking strategy: {', '.join(CHUNKING_STRATEGIES)}.")
    ] = "markdown",
    chunk_size: Annotated[int, typer.Option(min=16, help="Largest chunk, in characters.")] = 512,
    chunk_overlap: Annotated[
        int, typer.Option(min=0, help="Characters shared by neighbouring chunks.")
    ] = 50,
    separator: Annotated[
        str, typer.Option(help="Where the separator strategy cuts (\\n for a newline).")
    ] = "\\n\\n",
    description: Annotated[str, typer.Option(help="What the space holds.")] = "",
) -> None:
    """Create an empty knowledge space; its embedder and chunking are fixed from now on."""
    from pydantic import ValidationError

    from ragmeter.knowledge.chunking import ChunkingConfig

    if chunking not in CHUNKING_STRATEGIES:
        raise ConfigError(
            f"--chunking must be one of {', '.join(CHUNKING_STRATEGIES)}, got {chunking!r}"
        )
    try:
        config = ChunkingConfig(
            strategy=chunking,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            separator=_unescape(separator),
        )
    except ValidationError as exc:
        raise ConfigError(validation_message(exc)) from None
    info = _kb().create_space(name, embedder=embedder, chunking=config, description=description)
    console.print(
        f"created space '{info.name}' (id {info.id}, embedder {info.embedder}, "
        f"chunking {config.describe()})",
        highlight=False,
    )


@contextmanager
def _add_progress() -> Iterator[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("[bold]{task.description:<6}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        files = progress.add_task("files", total=None, note="")
        chunks = progress.add_task("chunks", total=None, note="", visible=False)

        def on_event(event: str, n: int) -> None:
            if event == "files_total":
                progress.update(files, total=n)
            elif event == "file":
                progress.advance(files, n)
            elif event == "chunks_total":
                progress.update(chunks, total=n, visible=True, note="embedding")
            elif event == "chunks":
                progress.advance(chunks, n)
            elif event == "indexing":
                progress.update(chunks, note="indexing")

        yield on_event


def _print_report(name: str, report: AddReport) -> None:
    parts = [
        f"added {len(report.added)}",
        f"updated {len(report.updated)}",
        f"unchanged {len(report.unchanged)}",
    ]
    if report.empty:
        parts.append(f"empty {len(report.empty)}")
    if report.skipped:
        parts.append(f"skipped {len(report.skipped)} (unsupported type)")
    parts.append(f"{report.chunks} new chunks in {report.seconds:.1f}s")
    console.print(f"space '{name}': " + ", ".join(parts), highlight=False)
    for path, reason in report.failed:
        err_console.print(
            f"[red]failed:[/] {escape(f'{path}: {reason}')}", highlight=False, soft_wrap=True
        )


def add_with_progress(
    kb: KnowledgeBase, name: str, paths: list[Path], ingester: Ingester | None = None
) -> AddReport:
    """Add documents with progress bars for files and chunks, then print what happened."""
    from ragmeter.knowledge.ingest import add_documents

    info = kb.space(name)
    with _add_progress() as on_event:
        report = run_sync(add_documents(kb, info.id, paths, progress=on_event, ingester=ingester))
    _print_report(info.name, report)
    return report


def _with_device(settings: Settings, device: str) -> Settings:
    """``settings`` with ``[knowledge] device`` set (ConfigError for an unknown device)."""
    from ragmeter.embeddings.local import check_device

    knowledge = settings.knowledge.model_copy(update={"device": check_device(device)})
    return settings.model_copy(update={"knowledge": knowledge})


@space_app.command("add")
@handles_errors
def add_command(
    name: Annotated[str, typer.Argument(help="Space name or id.")],
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders (recursive): md, txt, html, pdf.")
    ],
    executor: Annotated[
        str | None,
        typer.Option(
            help="Where documents are read, chunked and embedded: local (this process, the "
            "default) or ray (a Ray cluster; pip install 'ragmeter[ray]'). Default: "
            "[executor] kind in ragmeter.toml."
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="The Ray cluster: auto (the one this machine is part of) or HOST:PORT "
            "(default: [executor] address; none: a cluster of this machine for the command)."
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            help="Where the local embedding model runs, here or in the Ray workers: cpu "
            "(numpy), cuda (torch on the GPU; untested on GPUs in CI) or auto (cuda where "
            "torch sees a GPU). Default: \\[knowledge] device in ragmeter.toml, else cpu."
        ),
    ] = None,
) -> None:
    """Add documents; unchanged ones (same content hash) are skipped, changed ones re-chunked."""
    from ragmeter.runs.execution.choice import ingester_for

    kb = _kb()
    if device is not None:
        kb.settings = _with_device(kb.settings, device)
    ingester = ingester_for(kb.settings, executor, ray_address)
    report = add_with_progress(kb, name, paths, ingester)
    if report.failed:
        raise typer.Exit(1)


@space_app.command("list")
@handles_errors
def list_command() -> None:
    """List the knowledge spaces."""
    table = Table(title="knowledge spaces", title_justify="left")
    for column in ("id", "name", "embedder", "chunking", "documents", "chunks"):
        table.add_column(
            column, justify="right" if column in ("id", "documents", "chunks") else "left"
        )
    for info in _kb().spaces():
        table.add_row(
            str(info.id),
            info.name,
            info.embedder,
            info.chunking.describe(),
            str(info.documents),
            str(info.chunks),
        )
    console.print(table)


@space_app.command("docs")
@handles_errors
def docs_command(name: Annotated[str, typer.Argument(help="Space name or id.")]) -> None:
    """List a space's documents: name (what doc_name refers to), kind, size, chunks."""
    table = Table(title=f"documents of '{name}'", title_justify="left")
    for column in ("name", "kind", "bytes", "chunks"):
        table.add_column(column, justify="left" if column in ("name", "kind") else "right")
    for doc in _kb().documents(name):
        table.add_row(doc.name, doc.kind, str(doc.size), str(doc.chunk_count))
    console.print(table)


@space_app.command("chunks")
@handles_errors
def chunks_command(
    name: Annotated[str, typer.Argument(help="Space name or id.")],
    doc_name: Annotated[str, typer.Argument(help="Document name (relative path or file name).")],
) -> None:
    """Print a document's chunks, one JSON object a line, in document order."""
    for chunk in _kb().document_chunks(name, doc_name):
        typer.echo(json.dumps(chunk.model_dump(), ensure_ascii=False))


@space_app.command("search")
@handles_errors
def search_command(
    name: Annotated[str, typer.Argument(help="Space name or id.")],
    query: Annotated[str, typer.Argument(help="What to search for.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Hits to return.")] = 5,
    retriever: Annotated[str, typer.Option(help="vector, bm25 or hybrid.")] = "vector",
    score_threshold: Annotated[
        float | None, typer.Option(help="Drop hits scoring below this (cosine for vector).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per hit.")] = False,
) -> None:
    """Search a space and print the best chunks."""
    from ragmeter.knowledge.search import SpaceSearcher, parse_retrievers

    kinds = parse_retrievers(retriever)
    if len(kinds) != 1:
        raise ConfigError("search takes one retriever; compare several with 'ragmeter eval'")
    kind = kinds[0]
    searcher = SpaceSearcher(_kb(), name)
    (hits,) = run_sync(
        searcher.search([query], top_k=top_k, retriever=kind, score_threshold=score_threshold)
    )
    if as_json:
        for rank, hit in enumerate(hits, start=1):
            typer.echo(json.dumps({"rank": rank, **hit.to_dict()}, ensure_ascii=False))
        return
    table = Table(title=f"{kind} search in '{searcher.info.name}'", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("document")
    table.add_column("chunk")
    for rank, hit in enumerate(hits, start=1):
        preview = hit.content if len(hit.content) <= 160 else hit.content[:157] + "..."
        table.add_row(str(rank), f"{hit.score:.4f}", hit.document, preview.replace("\n", " "))
    console.print(table)
    if not hits:
        console.print("no chunk matched", style="yellow")


@space_app.command("rm")
@handles_errors
def rm_command(name: Annotated[str, typer.Argument(help="Space name or id.")]) -> None:
    """Remove a space with its documents, chunks and indexes."""
    info = _kb().delete_space(name)
    console.print(f"removed space '{info.name}' (id {info.id})", highlight=False)
