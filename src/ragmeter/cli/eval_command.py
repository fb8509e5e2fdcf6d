"""``ragmeter eval``: the command's options. Rows that carry their predictions, the recall
scene (``--space``) and the app scene (``--app``) run in ``cli.evaluate``; TREC files
(``--qrels`` and ``--run``) in ``cli.eval_trec``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragmeter._grades import MAX_GRADE
from ragmeter.cli._common import JudgeApiKeyEnv, JudgeBaseUrl, JudgeTimeout, handles_errors
from ragmeter.errors import ConfigError

__all__ = ["eval_command"]

#: where ``--help`` lists the options of TREC files
_TREC = "TREC files"
#: where ``--help`` lists what a stored run is called
_RUN = "Stored run"


@handles_errors
def eval_command(
    ctx: typer.Context,
    data: Annotated[
        Path | None,
        typer.Argument(
            help="Dataset: .jsonl, .json, .csv or .parquet; or a DB-GPT request body (.json), "
            "whose scene, metrics and context fill the options not given. Not with --qrels.",
            show_default=False,
        ),
    ] = None,
    metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metrics",
            "-m",
            help="Comma-separated metric names, e.g. mrr,ndcg@10 (optional when a request "
            "body names evaluate_metrics); repeatable. With --qrels: trec_eval's measures "
            "too (official, all_trec, P.5,10, ndcg_cut.10; default official).",
        ),
    ] = None,
    qrels: Annotated[
        Path | None,
        typer.Option(
            "--qrels",
            help="TREC relevance judgements: QID ITER DOCID REL lines (plain or .gz); with --run "
            "instead of DATA.",
            rich_help_panel=_TREC,
        ),
    ] = None,
    run: Annotated[
        Path | None,
        typer.Option(
            "--run",
            help="TREC run: QID Q0 DOCID RANK SCORE RUNID lines (plain or .gz), ranked by score "
            "as trec_eval does.",
            rich_help_panel=_TREC,
        ),
    ] = None,
    depth: Annotated[
        int | None,
        typer.Option(
            "--depth",
            min=1,
            help="Keep the first N results of each query (trec_eval -M).",
            rich_help_panel=_TREC,
        ),
    ] = None,
    complete: Annotated[
        bool,
        typer.Option(
            "--complete",
            help="Judged queries the run lacks score 0 and count (trec_eval -c).",
            rich_help_panel=_TREC,
        ),
    ] = False,
    output_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="table, trec (exactly trec_eval -q's lines) or trec-summary (trec_eval's "
            "without -q).",
            rich_help_panel=_TREC,
        ),
    ] = "table",
    top_k: Annotated[
        int | None,
        typer.Option(
            "--top-k",
            "-k",
            min=1,
            help="Cut-off for metrics without their own @k (names stay as written); with "
            "--space, chunks to retrieve (default 5).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the results here, in the format of the extension: .jsonl or .ndjson "
            "(one JSON line per row x metric), .parquet (the same records), .csv (one line "
            "per row, a column per metric).",
        ),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(
            help="Judge: a \\[models.NAME] of ragmeter.toml, or the model id at --judge-base-url."
        ),
    ] = None,
    judge_base_url: JudgeBaseUrl = None,
    judge_api_key_env: JudgeApiKeyEnv = None,
    judge_timeout: JudgeTimeout = None,
    plan: Annotated[
        str | None,
        typer.Option(
            help="fused (fewest requests, the default) or separate (one task per request)."
        ),
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(help="Judge prompt language: auto (from each row, the default), en or zh."),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Ask the judge even when a reply is cached.")
    ] = False,
    embedding_base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible embeddings endpoint (default: local).")
    ] = None,
    embedding_model: Annotated[
        str | None,
        typer.Option(help="Embedding model: a \\[models.NAME], or the id at --embedding-base-url."),
    ] = None,
    embedding_api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the embeddings API key.")
    ] = None,
    max_concurrency: Annotated[
        int, typer.Option(min=1, help="Judge requests (and per-row metrics) in flight at once.")
    ] = 16,
    space: Annotated[
        str | None,
        typer.Option(help="Recall scene: retrieve top-k chunks from this knowledge space."),
    ] = None,
    retriever: Annotated[
        str | None,
        typer.Option(help="Recall scene: vector, bm25, hybrid, or several side by side."),
    ] = None,
    score_threshold: Annotated[
        float | None, typer.Option(help="Recall scene: drop hits scoring below this.")
    ] = None,
    app_name: Annotated[
        str | None,
        typer.Option("--app", help="App scene: answer every row with this app first."),
    ] = None,
    judge_prompt: Annotated[
        str | None,
        typer.Option(help="Prompt code of AnswerRelevancyMetric's judge template."),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            help="Run on this ragmeter server (e.g. http://127.0.0.1:5670); its key is read "
            "from $RAGMETER_API_KEY. Spaces, apps, prompts and models are the server's."
        ),
    ] = None,
    no_store: Annotated[
        bool,
        typer.Option(
            "--no-store",
            help="Keep nothing in the store (by default the evaluation of a dataset is a stored "
            "run: rows kept as they finish, resumable with 'ragmeter runs resume', listed by "
            "'ragmeter runs list').",
        ),
    ] = False,
    store: Annotated[
        bool,
        typer.Option(
            "--store",
            help="TREC files: keep the evaluation as a stored run (for the dashboard, runs "
            "compare and gates). By default a TREC evaluation keeps nothing, as trec_eval.",
        ),
    ] = False,
    name: Annotated[
        str | None,
        typer.Option(
            help="Call the stored run this (default: the dataset's name, with the retriever "
            "when several are compared); with several retrievers each run is NAME-RETRIEVER.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag",
            help="Tag the stored run (repeatable), e.g. --tag nightly.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    note: Annotated[
        str | None, typer.Option(help="A note kept with the stored run.", rich_help_panel=_RUN)
    ] = None,
    dataset_name: Annotated[
        str | None,
        typer.Option(
            help="Keep the rows as this dataset (default: the file's name without extension). "
            "The same rows reuse the stored version; changed rows become its next version.",
            rich_help_panel=_RUN,
        ),
    ] = None,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            help="Gate the results on this rule (repeatable), e.g. 'faithfulness.mean >= 0.8' "
            "or 'faithfulness: delta >= -0.02' with --baseline; see 'ragmeter gate --help'.",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(help="Gate against this stored run (id or name) or results file."),
    ] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Write the gate's outcome as JUnit XML here.")
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option(help="Write the gate's markdown summary (for a PR) here.")
    ] = None,
    relevance_level: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_GRADE,
            help="Ranking metrics: the grade from which a judged item is relevant (default 1; "
            "trec_eval's -l). nDCG uses the grades as gains.",
        ),
    ] = None,
    no_relevant: Annotated[
        str | None,
        typer.Option(
            help="Ranking metrics on a row with no relevant item: null (the default, with the "
            "reason) or zero (trec_eval's convention)."
        ),
    ] = None,
    repeats: Annotated[
        int,
        typer.Option(
            min=1,
            max=20,
            help="Judge every row this many times (each repeat's requests with their own "
            "seed, cached apart), report and gate the mean, and list the rows whose repeats "
            "disagree. A stored run keeps the first repeat's score, and every repeat's in its "
            "details (what a review queue's disagreement rule reads).",
        ),
    ] = 1,
    executor: Annotated[
        str | None,
        typer.Option(
            help="Where the rows are scored: local (this process, the default) or ray (a Ray "
            "cluster; pip install 'ragmeter[ray]'). Default: [executor] kind in ragmeter.toml."
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="The Ray cluster: auto (the one this machine is part of) or ray://HOST:PORT "
            "(default: [executor] address; none: a cluster of this machine for the command)."
        ),
    ] = None,
) -> None:
    """Evaluate a dataset with metrics (or TREC files: --qrels and --run); print a summary
    table and write the results.

    With --space the rows' queries are first searched in a knowledge space (scene recall);
    with --app they are first answered by an app (scene app). With --rule, --baseline,
    --junit or --markdown the results are then gated as 'ragmeter gate' does (rules from
    --rule, else \\[gate] in ragmeter.toml). Exit codes: 0 done (and every rule passed), 1 a
    rule failed or any other failure, including a run where no result has a score, 2 bad
    input.
    """
    from ragmeter.cli.eval_request import EvalRequest
    from ragmeter.cli.eval_trec import TrecRequest, check_trec_options, given_options, run_trec
    from ragmeter.cli.evaluate import evaluate_request
    from ragmeter.cli.gate import GateRequest
    from ragmeter.cli.results_file import check_results_path

    if out is not None:
        check_results_path(out)  # an unknown extension fails before any work
    trec = TrecRequest(
        qrels,
        run,
        tuple(metrics or ()),
        depth,
        complete,
        relevance_level,
        output_format,
        out,
        store,
    )
    check_trec_options(trec, data, given_options(ctx))
    if trec.asked:
        run_trec(trec)
        return
    assert data is not None  # check_trec_options: DATA or TREC files
    gating = GateRequest(tuple(rule or ()), baseline, junit, markdown)
    prepared = None
    if gating.asked:
        from ragmeter.cli.gate import prepare_gate

        if retriever is not None and len([r for r in retriever.split(",") if r.strip()]) > 1:
            raise ConfigError("--rule gates one evaluation: give one --retriever")
        prepared = prepare_gate(gating)
    reports, flaky = evaluate_request(
        EvalRequest(
            data=data,
            metrics=",".join(metrics or ()),
            top_k=top_k,
            out=out,
            judge_model=judge_model,
            judge_base_url=judge_base_url,
            judge_api_key_env=judge_api_key_env,
            judge_timeout=judge_timeout,
            judge_prompt=judge_prompt,
            plan=plan,
            language=language,
            no_cache=no_cache,
            embedding_model=embedding_model,
            embedding_base_url=embedding_base_url,
            embedding_api_key_env=embedding_api_key_env,
            max_concurrency=max_concurrency,
            space=space,
            retriever=retriever,
            score_threshold=score_threshold,
            app=app_name,
            server=server,
            no_store=no_store,
            repeats=repeats,
            relevance_level=relevance_level,
            no_relevant=no_relevant,
            name=name,
            tags=tuple(tag or ()),
            note=note or "",
            dataset_name=dataset_name,
            executor=executor,
            ray_address=ray_address,
        )
    )
    if prepared is not None:
        from ragmeter.cli.gate import judge

        report = reports[0][1]
        judge(prepared, report, report.run_id or "this evaluation", gating, flaky)
