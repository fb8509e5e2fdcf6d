"""The ``ragmeter`` command line: ``eval``, ``metrics``, ``demo``."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from ragmeter import __version__
from ragmeter.cli._render import null_reasons, progress_bar, summary_table
from ragmeter.datasets import load_dataset
from ragmeter.embeddings import Embedder, OpenAIEmbedder
from ragmeter.errors import ConfigError, DatasetError, MetricError, RagmeterError
from ragmeter.metrics import metric_entries
from ragmeter.runs import evaluate, resolve_metrics

__all__ = ["app", "main"]

app = typer.Typer(
    name="ragmeter",
    help="Evaluate RAG pipelines and LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

#: exit code for bad input (dataset, options, metric names); 1 is any other failure
EXIT_BAD_INPUT = 2


def _handles_errors(command: F) -> F:
    """Print a ``RagmeterError`` as one clear line and exit non-zero."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except RagmeterError as exc:
            err_console.print(
                f"[bold red]error:[/] {exc}", markup=True, highlight=False, soft_wrap=True
            )
            bad_input = isinstance(exc, DatasetError | ConfigError | MetricError)
            raise typer.Exit(EXIT_BAD_INPUT if bad_input else 1) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        console.print(f"ragmeter {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Evaluate RAG pipelines and LLM agents."""


def _embedder(base_url: str | None, model: str | None, key_env: str) -> Embedder | None:
    if base_url is None and model is None:
        return None  # the local MiniLM, loaded only if a metric needs it
    if model is None:
        raise ConfigError("--embedding-base-url needs --embedding-model")
    return OpenAIEmbedder(model, base_url=base_url, api_key=os.environ.get(key_env))


@app.command("eval")
@_handles_errors
def eval_command(
    data: Annotated[Path, typer.Argument(help="Dataset: .jsonl, .json, .csv or .parquet.")],
    metrics: Annotated[
        str, typer.Option("--metrics", "-m", help="Comma-separated metric names, e.g. mrr,ndcg@10.")
    ],
    top_k: Annotated[
        int | None,
        typer.Option("--top-k", "-k", min=1, help="Cut-off for metrics without their own @k."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write one JSON line per row x metric.")
    ] = None,
    embedding_base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible embeddings endpoint (default: local).")
    ] = None,
    embedding_model: Annotated[
        str | None, typer.Option(help="Embedding model name at --embedding-base-url.")
    ] = None,
    embedding_api_key_env: Annotated[
        str, typer.Option(help="Environment variable holding the embeddings API key.")
    ] = "OPENAI_API_KEY",
    max_concurrency: Annotated[
        int, typer.Option(min=1, help="Rows scored at once by per-row metrics.")
    ] = 16,
) -> None:
    """Evaluate a dataset with metrics; print a summary table and write the results."""
    dataset = load_dataset(data)
    resolved = resolve_metrics(metrics, top_k=top_k)
    embedder = _embedder(embedding_base_url, embedding_model, embedding_api_key_env)
    total = len(dataset) * len(resolved)
    with progress_bar(console, total, "evaluating") as advance:
        report = evaluate(
            dataset,
            resolved,
            embedder=embedder,
            top_k=top_k,
            max_concurrency=max_concurrency,
            on_progress=advance,
        )
    console.print(summary_table(report, title=f"{data} · {report.rows} rows"))
    _print_nulls(report)
    if out is not None:
        report.to_jsonl(out)
        console.print(f"results: {out} ({len(report)} lines)")


def _print_nulls(report: Any) -> None:
    reasons = null_reasons(report)
    if reasons:
        nulls = len(report.errors())
        console.print(f"[yellow]{nulls} result(s) have no score; reasons:[/]")
        for line in reasons:
            console.print(f"  [yellow]-[/] {line}", highlight=False)


@app.command("metrics")
@_handles_errors
def metrics_command() -> None:
    """List every registered metric with a one-line description."""
    table = Table(title="metrics", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("also", style="dim")
    table.add_column("@k")
    table.add_column("description")
    for entry in metric_entries():
        table.add_row(
            entry.name, ", ".join(entry.aliases), "yes" if entry.takes_k else "", entry.description
        )
    console.print(table)


@app.command("demo")
@_handles_errors
def demo_command(
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Also write the results as JSONL here.")
    ] = None,
) -> None:
    """Evaluate the bundled demo retrieval runs offline (local embeddings, no key)."""
    from ragmeter.cli.demo import run_demo

    run_demo(console, out)


def main() -> None:
    """Entry point of the ``ragmeter`` script."""
    app()
