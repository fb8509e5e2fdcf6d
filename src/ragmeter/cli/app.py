"""The ``ragmeter`` command line: ``eval``, ``gate``, ``serve``, ``runs``, ``space``,
``prompt``, ``app``, ``model``, ``metrics``, ``demo``, ``report``, ``agreement``,
``judge`` (judge cards), ``judge-server``."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from pathlib import Path
from typing import Annotated, ClassVar

import typer

from ragmeter import __version__
from ragmeter.cli._common import console, handles_errors
from ragmeter.cli._lazy import LazyGroup, LazyTyper
from ragmeter.cli.eval_command import eval_command
from ragmeter.errors import ConfigError

__all__ = ["app", "main"]


class _Commands(LazyGroup):
    """The command groups, imported when run: each pulls in the store, indexes or client."""

    lazy: ClassVar[dict[str, LazyTyper]] = {
        "space": LazyTyper(
            "ragmeter.cli.space",
            "space_app",
            "Knowledge spaces: documents -> chunks -> vector and BM25 indexes.",
        ),
        "prompt": LazyTyper(
            "ragmeter.cli.prompts",
            "prompt_app",
            "Prompt templates by code: judge templates and app answer templates.",
        ),
        "app": LazyTyper(
            "ragmeter.cli.apps",
            "app_app",
            "Apps to evaluate: a RagApp (space + prompt + model), an HTTP endpoint or a function.",
        ),
        "runs": LazyTyper(
            "ragmeter.cli.runs",
            "runs_app",
            "Stored runs (from ragmeter eval and serve): list, show, compare, name, tag, archive, "
            "remove, results, cancel, resume.",
        ),
        "datasets": LazyTyper(
            "ragmeter.cli.datasets",
            "datasets_app",
            "Stored datasets and their versions: list, show, rm.",
        ),
        "testset": LazyTyper(
            "ragmeter.cli.testset",
            "testset_app",
            "Test sets generated from a knowledge space, with chunk ids as relevance labels.",
        ),
        "users": LazyTyper(
            "ragmeter.cli.users",
            "users_app",
            "Users of the service and their keys: add, list, disable, rotate.",
        ),
        "labels": LazyTyper(
            "ragmeter.cli.labels",
            "labels_app",
            "Human labels of a run's or a dataset's rows: import, export, list.",
        ),
        "model": LazyTyper(
            "ragmeter.cli.models",
            "model_app",
            "Models by name (\\[models.NAME] of ragmeter.toml): add, list.",
        ),
        "judge": LazyTyper(
            "ragmeter.cli.judge",
            "judge_app",
            "Judge cards: a judge's agreement with people on a human-labelled suite.",
        ),
    }


app = typer.Typer(
    name="ragmeter",
    cls=_Commands,
    help="Evaluate RAG pipelines and LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


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


app.command("eval")(eval_command)


@app.command("gate")
@handles_errors
def gate_command(
    candidate: Annotated[
        str,
        typer.Argument(
            help="The candidate: a stored run (id or name) or a results file (JSONL of "
            "'ragmeter eval --out' or 'ragmeter runs results')."
        ),
    ],
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            "-r",
            help="A rule (repeatable): METRIC.STAT OP NUMBER with STAT mean, ci95_low, "
            "ci95_high, pass_rate, null_rate (null_rate alone: every metric), "
            "calibrated_mean, calibrated_low or calibrated_high (corrected by human labels), "
            "or 'METRIC: delta >= NUMBER' against --baseline. Default: \\[gate] rules.",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="The baseline: a stored run (id or name) or a results file; rows pair by "
            "id, else by query. Default: \\[gate] baseline."
        ),
    ] = None,
    junit: Annotated[
        Path | None,
        typer.Option(help="Write JUnit XML here: each rule a test case, failed rows listed."),
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(help="Write a markdown summary here (to post on a pull request)."),
    ] = None,
    calibrated: Annotated[
        bool,
        typer.Option(
            "--calibrated",
            help="Bound each metric's mean corrected by the run's human labels (PPI++) "
            "instead of the judge's own: mean, ci95_low and ci95_high rules become "
            "calibrated_mean, calibrated_low and calibrated_high.",
        ),
    ] = False,
    require_card: Annotated[
        list[str] | None,
        typer.Option(
            "--require-card",
            help="METRIC:STAT>=NUMBER (repeatable; STAT kappa, balanced_accuracy, f1, "
            "accuracy, spearman): the newest judge card of the run's judge model on METRIC "
            "must meet it ('ragmeter judge card' makes one); fails when there is none.",
        ),
    ] = None,
) -> None:
    """Judge rules on a run: absolute bounds on its scores, and non-inferiority against a
    baseline judged on the paired difference's 95% confidence bound (not the point estimate).

    Rules come from --rule, else from \\[gate] rules in ragmeter.toml. Exit codes: 0 every rule
    passed, 1 a rule failed, 2 bad input or configuration.
    """
    from ragmeter.cli.gate import GateRequest, run_gate

    run_gate(
        candidate,
        GateRequest(
            tuple(rule or ()), baseline, junit, markdown, calibrated, tuple(require_card or ())
        ),
    )


@app.command("metrics")
@handles_errors
def metrics_command() -> None:
    """List every registered metric with a one-line description."""
    from rich.table import Table

    from ragmeter.metrics import metric_entries

    table = Table(title="metrics", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("also", style="dim")
    table.add_column("@")
    table.add_column("description")
    for entry in metric_entries():
        cut = "k" if entry.takes_k else "x" if entry.takes_at else ""
        table.add_row(entry.name, ", ".join(entry.aliases), cut, entry.description)
    console.print(
        "@k: a rank cut-off (ndcg@10); @x: a number of the metric's own (iprec@0.1, a recall "
        "level). trec_eval's names take it as a suffix (P_10, iprec_at_recall_0.10)."
    )
    console.print(table)


@app.command("report")
@handles_errors
def report_command(
    run_id: Annotated[str, typer.Argument(help="The stored run (ragmeter runs list).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")],
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare", help="A baseline run: paired differences and the rows that regressed."
        ),
    ] = None,
    worst: Annotated[
        int, typer.Option(min=1, max=1000, help="Rows shown per metric: lowest scores, then nulls.")
    ] = 20,
    language: Annotated[str, typer.Option(help="Text of the report: en or zh.")] = "en",
) -> None:
    """Write a stored run as one self-contained HTML file (summary, histograms, the worst rows
    with the judge's reasoning); it fetches nothing when opened: a CI artefact or an e-mail."""
    from ragmeter.cli.report import write_report

    write_report(run_id, out, baseline=compare, worst=worst, language=language)


@app.command("agreement")
@handles_errors
def agreement_command(
    run: Annotated[str, typer.Argument(help="The stored run (id, name or start of its id).")],
    metric: Annotated[str | None, typer.Option(help="Only this metric of the run.")] = None,
    threshold: Annotated[
        float | None,
        typer.Option(help="Scores at or above it pass: pass/fail statistics of 0-1 scores."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON, for scripts.")] = False,
) -> None:
    """How far the run's judge agrees with the human labels of its rows, per metric and per
    row language: kappa, balanced accuracy, F1, Spearman against each reviewer and their
    majority, Krippendorff's alpha among reviewers, and the mean corrected by the labels
    (PPI++), each with a 95% CI and its n."""
    from ragmeter.cli.agreement import show_agreement

    show_agreement(run, metric=metric, threshold=threshold, as_json=as_json)


@app.command("demo")
@handles_errors
def demo_command(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Also write the results here (.jsonl, .ndjson, .parquet, .csv)."
        ),
    ] = None,
    export_docs: Annotated[
        Path | None,
        typer.Option(
            "--export-docs",
            help="Only copy the demo's six markdown documents (en/, zh/) into this folder "
            "(made if missing; files of the same name are replaced), for the README's examples.",
        ),
    ] = None,
) -> None:
    """Build a space from bundled docs and compare vector, bm25 and hybrid retrieval, offline;
    then generate a small test set from it with the scripted judge and score it by chunk id.

    The space, 'ragmeter-demo', stays in the store to explore with 'ragmeter space'.
    """
    from ragmeter.cli.demo import export_docs as copy_docs
    from ragmeter.cli.demo import run_demo
    from ragmeter.cli.results_file import check_results_path

    if export_docs is not None:
        copy_docs(console, export_docs)
        return
    if out is not None:
        check_results_path(out)
    run_demo(console, out)


@app.command("judge-server")
@handles_errors
def judge_server_command(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one).")] = 8765,
    latency_ms: Annotated[
        float, typer.Option(min=0, help="Delay before every reply, like a real model.")
    ] = 0.0,
    faults: Annotated[
        str,
        typer.Option(
            help="Inject faults into chat replies, e.g. "
            "malformed=0.3,rate_limit=0.1,server_error=0.05,hang=0.02."
        ),
    ] = "",
    hang_seconds: Annotated[float, typer.Option(min=0, help="How long a hang lasts.")] = 30.0,
    retry_after: Annotated[
        float, typer.Option(min=0, help="Retry-After seconds sent with a 429.")
    ] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the fault and noise draws.")] = 0,
    noise: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of verdicts flipped, fixed per request and --seed: another seed "
            "judges like another sample of a model (for gates against judge noise).",
        ),
    ] = 0.0,
    quiet: Annotated[
        bool, typer.Option("--quiet", help="Do not print a line per request.")
    ] = False,
    answers: Annotated[
        Path | None,
        typer.Option(
            help='JSON of pinned answers, {"outputs": {task key: output}, "embeddings": '
            "{text: vector}}, given as written (replay a recorded judgement)."
        ),
    ] = None,
) -> None:
    """Serve a scripted, OpenAI-compatible judge (chat + embeddings) for dry runs and tests.

    It answers ragmeter's prompts with deterministic verdicts and reports tokens, so a run
    against it shows what a real model would be asked, at no cost.
    """
    from ragmeter.testing import ScriptedJudgeServer, parse_faults, read_pinned

    plan = parse_faults(faults, hang_seconds=hang_seconds, retry_after=retry_after, seed=seed)
    pinned = None if answers is None else read_pinned(answers)
    log = None if quiet else (lambda line: console.print(line, highlight=False))
    try:
        server = ScriptedJudgeServer(
            host, port, latency_ms=latency_ms, faults=plan, log=log, noise=noise,
            noise_seed=seed, pinned=pinned,
        )  # fmt: skip
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"cannot listen on {host}:{port}: {reason} (is a judge-server already running "
            "there? choose another --port, or 0 for any free one)"
        ) from None
    console.print(
        f"scripted judge at {server.url} (model: any name, e.g. scripted); Ctrl-C stops it",
        highlight=False,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stats = server.snapshot()
        server.stop()
        console.print(f"served: {stats}", highlight=False)


@app.command("serve")
@handles_errors
def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port (DB-GPT's default).")] = 5670,
    insecure_no_auth: Annotated[
        bool,
        typer.Option(
            "--insecure-no-auth",
            help="Listen beyond loopback with no API keys configured (anyone may call it).",
        ),
    ] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the dashboard in a browser once it is up.")
    ] = False,
) -> None:
    """Serve the web dashboard at / and the HTTP API (DB-GPT-compatible /evaluation, runs,
    spaces, prompts, apps, datasets) over this store; OpenAPI docs at /docs.

    Keys come from \\[server] api_keys in ragmeter.toml or $RAGMETER_API_KEYS; every route but
    /health then needs 'Authorization: Bearer <key>'.
    """
    from ragmeter.config import load_settings
    from ragmeter.service import check_bind, serve
    from ragmeter.service.server import check_port

    settings = load_settings()
    check_bind(host, settings, insecure_no_auth)
    check_port(host, port)
    from ragmeter.service.dashboard.opener import dashboard_url, open_when_up

    url = dashboard_url(host, port)
    console.print(f"ragmeter dashboard at {url} (API docs: {url}docs)", highlight=False)
    if open_browser:
        open_when_up(url)
    serve(host, port, insecure_no_auth=insecure_no_auth, settings=settings, log_level=log_level)


def _exit_now(code: object) -> None:
    """End the process with ``code`` without tearing every module down (freeing openai's
    types and SQLAlchemy alone takes ~0.5-0.9 s): exit handlers run and the output is flushed
    first. Returns instead (the normal exit then) when another thread still runs, which that
    exit would wait for, or when ``code`` is a message to print."""
    if code is not None and not isinstance(code, int):
        return
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code or 0)


def main() -> None:
    """Entry point of the ``ragmeter`` script."""
    try:
        app()
    except SystemExit as exc:  # click ends every command with one, success included
        _exit_now(exc.code)
        raise
