"""``ragmeter testset generate``: write a gated, labelled test set from a knowledge space."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ragmeter._sync import run_sync
from ragmeter.cli._common import JudgeApiKeyEnv, JudgeBaseUrl, console, handles_errors
from ragmeter.errors import ConfigError, DatasetError, clip

if TYPE_CHECKING:
    from ragmeter.testsets.config import TestsetConfig
    from ragmeter.testsets.generate import Estimate, TestsetReport

__all__ = ["testset_app"]

testset_app = typer.Typer(
    name="testset",
    help="Test sets generated from a knowledge space, with chunk ids as relevance labels.",
    no_args_is_help=True,
)


def _read_existing(out: Path) -> list[dict[str, Any]]:
    """Rows of a file a previous run of the same generation left (resume), or none."""
    if not out.exists():
        return []
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(out.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"cannot resume: not a JSON row ({exc.msg}); remove the file or choose "
                "another --out",
                source=str(out),
                line=number,
            ) from None
        if not isinstance(row, dict) or "query" not in row or "reference_ids" not in row:
            raise DatasetError(
                "cannot resume: not a generated test set row (needs query and "
                "reference_ids); remove the file or choose another --out",
                source=str(out),
                line=number,
            )
        rows.append(row)
    return rows


def _check_same_generation(rows: list[dict[str, Any]], config: TestsetConfig, out: Path) -> None:
    """A file is resumed only by the generation that wrote it (the same seed)."""
    for number, row in enumerate(rows, start=1):
        metadata = row.get("metadata")
        seed = metadata.get("seed") if isinstance(metadata, dict) else None
        if seed != config.seed:
            raise ConfigError(
                f"{out} row {number} was generated with --seed {seed}, not {config.seed}: "
                "resume with the same --seed, or choose another --out"
            )


def _estimate_table(estimate: Estimate, config: TestsetConfig) -> Table:
    table = Table(title="dry run: what the generation would send", title_justify="left")
    table.add_column("", style="bold")
    table.add_column("value", justify="right")
    table.add_row("questions", str(estimate.questions))
    table.add_row("usable chunks", str(estimate.usable_chunks))
    for reason, count in sorted(estimate.skipped.items()):
        table.add_row(f"skipped: {reason}", str(count))
    table.add_row("chat requests (all pass)", str(estimate.requests))
    table.add_row("prompt tokens (all pass)", f"{estimate.prompt_tokens:,}")
    table.add_row("requests per rejected candidate", str(estimate.per_candidate_requests))
    for label, limit in (
        ("--max-requests", config.max_requests),
        ("--max-tokens", config.max_tokens),
    ):
        if limit is not None:
            table.add_row(label, f"{limit:,}")
    return table


def _summary_table(report: TestsetReport, size: int) -> Table:
    from ragmeter.testsets.gates import GATES

    rows: list[tuple[str, str, str]] = [("accepted", f"{report.accepted} of {size}", "")]
    if report.resumed:
        rows.append(("resumed from the file", str(report.resumed), ""))
    rows.append(("candidates tried", str(report.candidates), ""))
    for gate in (*GATES, "generation_failed"):
        example = clip(report.examples.get(gate, ""), 80)
        rows.append((f"rejected: {gate}", str(report.rejected.get(gate, 0)), example))
    for reason, count in sorted(report.skipped.items()):
        rows.append((f"chunks skipped: {reason}", str(count), ""))
    for kind, count in sorted(report.moved.items()):
        rows.append((f"written as single: too few {kind} groups", str(count), ""))
    usage = report.usage
    rows.append(("chat requests", f"{usage.requests:g} (+{usage.cached:g} cached)", ""))
    rows.append(("tokens", f"{usage.prompt_tokens:g} prompt, {usage.completion_tokens:g} out", ""))
    examples = any(example for _, _, example in rows)  # the column only when something shows
    table = Table(title="test set generation", title_justify="left")
    table.add_column("", style="bold")
    table.add_column("count", justify="right")
    if examples:
        table.add_column("example of a rejected question", overflow="fold")
    for row in rows:
        table.add_row(*(row if examples else row[:2]))
    return table


@testset_app.command("generate")
@handles_errors
def generate_command(
    space: Annotated[str, typer.Option(help="Knowledge space to write questions from.")],
    size: Annotated[int, typer.Option(help="Questions to write.")],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="JSONL file; rows are appended as they pass, and a file left by a run cut "
            "short is resumed (needed unless --dry-run).",
        ),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(
            help="Judge: a \\[models.NAME] of ragmeter.toml, or the id at --judge-base-url."
        ),
    ] = None,
    judge_base_url: JudgeBaseUrl = None,
    judge_api_key_env: JudgeApiKeyEnv = None,
    name: Annotated[
        str | None, typer.Option(help="Also keep the rows in the store as this named dataset.")
    ] = None,
    types: Annotated[
        str, typer.Option(help="Question types and their shares: single, multi, abstract.")
    ] = "single=0.6,multi=0.3,abstract=0.1",
    language: Annotated[
        str, typer.Option(help="auto (the source chunks' language), en or zh.")
    ] = "auto",
    docs: Annotated[
        list[str] | None, typer.Option("--docs", help="Only these documents (repeat the option).")
    ] = None,
    styles: Annotated[
        str,
        typer.Option(
            help="Query styles, spread over the questions: plain, concise, conversational, "
            "keywords, typos."
        ),
    ] = "plain",
    personas: Annotated[
        list[str] | None,
        typer.Option(
            "--personas",
            help="Who asks, e.g. 'a new user' (repeat for several, spread over the questions).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the chunk order (same seed, same set).")] = 0,
    graded: Annotated[
        bool,
        typer.Option(
            "--graded",
            help="Also grade each row's relevance (reference_relevance): 2 for the chunks the "
            "question was written from, 1 for the other chunks of their documents.",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the requests and tokens it expects; send none.")
    ] = False,
    max_requests: Annotated[
        int | None, typer.Option(help="Stop after this many chat requests, keeping what passed.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Stop after this many tokens, keeping what passed.")
    ] = None,
    max_concurrency: Annotated[
        int, typer.Option(min=1, max=256, help="Candidates written at once.")
    ] = 8,
) -> None:
    """Write SIZE questions with reference answers from a space's chunks, each with the ids of
    the chunks it came from (reference_ids), so 'ragmeter eval --space' judges retrieval by id."""
    from ragmeter.testsets.config import TestsetConfig, parse_styles, parse_types

    if size < 1:
        raise ConfigError(f"--size must be at least 1, got {size}")
    if language not in ("auto", "en", "zh"):
        raise ConfigError(f"--language must be auto, en or zh, got {language!r}")
    config = TestsetConfig.build(
        size=size,
        types=parse_types(types),
        language=language,
        docs=tuple(docs or ()),
        styles=parse_styles(styles),
        personas=tuple(personas or ()),
        seed=seed,
        graded=graded,
        max_requests=max_requests,
        max_tokens=max_tokens,
        concurrency=max_concurrency,
    )
    if not dry_run and judge_model is None:
        raise ConfigError("--judge-model is required (or --dry-run to see the cost first)")
    if not dry_run and out is None:
        raise ConfigError("--out is required: the JSONL file to write the rows to")
    run_sync(
        _generate(config, space, out, judge_model, judge_base_url, judge_api_key_env, name, dry_run)
    )


async def _generate(
    config: TestsetConfig,
    space: str,
    out: Path | None,
    judge_model: str | None,
    judge_base_url: str | None,
    judge_api_key_env: str | None,
    name: str | None,
    dry_run: bool,
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ragmeter.judge.from_config import judge_from_config
    from ragmeter.knowledge.search import SpaceSearcher
    from ragmeter.knowledge.spaces import KnowledgeBase
    from ragmeter.testsets.generate import TestsetGenerator

    kb = KnowledgeBase()
    searcher = SpaceSearcher(kb, space)
    if dry_run:
        generator = TestsetGenerator(searcher, None, config)
        console.print(_estimate_table(generator.estimate(), config))
        return
    assert judge_model is not None  # checked by the command
    assert out is not None
    judge = judge_from_config(
        judge_model, base_url=judge_base_url, api_key_env=judge_api_key_env, settings=kb.settings
    )
    existing = _read_existing(out)
    _check_same_generation(existing, config, out)
    if existing:
        console.print(f"resuming: {len(existing)} rows already in {out}", highlight=False)
    generator = TestsetGenerator(searcher, judge, config)
    out.parent.mkdir(parents=True, exist_ok=True)
    columns = (
        TextColumn("[bold]questions"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    try:
        with (
            out.open("a", encoding="utf-8") as sink,
            Progress(*columns, console=console, transient=True) as bar,
        ):
            task = bar.add_task("questions", total=config.size)

            def on_row(row: dict[str, Any]) -> None:
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
                sink.flush()

            report = await generator.generate(
                existing=existing,
                on_row=on_row,
                progress=lambda n: bar.update(task, completed=n),
            )
    finally:
        await judge.aclose()
        aclose = getattr(searcher.embedder, "aclose", None)
        if aclose is not None:
            await aclose()
    console.print(_summary_table(report, config.size))
    console.print(f"wrote {report.accepted} rows to {out}", highlight=False)
    if report.stopped and report.accepted < config.size:
        console.print(f"stopped early: {report.stopped}", highlight=False)
    if name is not None:
        _store(report.rows, name, out)


def _store(rows: list[dict[str, Any]], name: str, out: Path) -> None:
    from ragmeter.config import load_settings
    from ragmeter.datasets.row import row_from_mapping
    from ragmeter.reports.html import shared_name
    from ragmeter.runs.storage.store import RunStore
    from ragmeter.store.db import open_store

    checked = [row_from_mapping(r, i, source=str(out)).to_raw() for i, r in enumerate(rows)]
    runs = RunStore(open_store(load_settings().store_url()))
    record, new = runs.keep_dataset(checked, name=name, source=shared_name(str(out)))
    kept = "stored as" if new else "the same rows as"
    console.print(
        f"{kept} dataset '{name}' version {record.version} ({record.row_count} rows)",
        highlight=False,
    )
