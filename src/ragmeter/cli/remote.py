"""``ragmeter eval --server URL``: the same evaluation, run and stored by a ragmeter server.
The rows are checked here, sent with the request, and the results come back for the same
summary table and ``--out`` file as a local run."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ragmeter._specs import split_specs
from ragmeter.cli._common import console
from ragmeter.cli._render import progress_bars
from ragmeter.client import ClientError
from ragmeter.client._base import KEY_ENV
from ragmeter.errors import ConfigError, RagmeterError
from ragmeter.knowledge.search import parse_retrievers
from ragmeter.metrics.scales import scale_labels
from ragmeter.reports import EvaluationReport, ResultRecord
from ragmeter.runs.planning.request import MAX_PARALLEL
from ragmeter.runs.planning.scoring import check_judge, resolve_metrics

if TYPE_CHECKING:
    from ragmeter.cli.eval_output import Reports
    from ragmeter.cli.eval_request import EvalRequest
    from ragmeter.client import Client

__all__ = ["api_base_of", "run_remote"]

#: options that name things on this machine, which a server cannot use
_LOCAL_ONLY = {
    "judge_base_url": "--judge-base-url",
    "judge_api_key_env": "--judge-api-key-env",
    "judge_timeout": "--judge-timeout",
    "embedding_base_url": "--embedding-base-url",
    "embedding_api_key_env": "--embedding-api-key-env",
}


def api_base_of(url: str) -> str:
    """``http://host:5670`` or ``http://host:5670/api/v2`` -> the client's api_base."""
    url = url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--server must be an http(s) URL, got {url!r}")
    return url if url.endswith("/api/v2") else f"{url}/api/v2"


def _check(request: EvalRequest) -> None:
    for field, option in _LOCAL_ONLY.items():
        if getattr(request, field) is not None:
            raise ConfigError(
                f"{option} is not available with --server: the server uses the models of "
                "its own ragmeter.toml (name one with --judge-model / --embedding-model)"
            )
    if request.no_cache:
        raise ConfigError("--no-cache is not available with --server")
    if request.app is not None and request.space is not None:
        raise ConfigError(
            "--space with --app is not available with --server: a server's app scene resolves "
            "doc_name in the app's own space"
        )
    _check_judge(request)


def _check_judge(request: EvalRequest) -> None:
    """Say here, naming ``--judge-model``, that judged metrics need one (the server's answer
    would name its own field, ``context.model``)."""
    if request.judge_model is not None:
        return
    try:
        metrics = resolve_metrics(request.metrics, top_k=request.top_k)
    except RagmeterError:
        return  # the server knows its metrics best: let it answer
    check_judge(
        None, metrics, hint=" (give --judge-model NAME: a [models.NAME] of the server's config)"
    )


def _refused(exc: ClientError, server: str) -> RagmeterError:
    """A 401 says which variable the command reads its key from (not the server's)."""
    if exc.status != 401:
        return exc
    given = "is not set" if not os.environ.get(KEY_ENV) else "holds a key the server refused"
    return ConfigError(
        f"{server} needs an API key and ${KEY_ENV} {given}: set ${KEY_ENV} to one of the "
        "server's keys (its [server] api_keys or $RAGMETER_API_KEYS)"
    )


def _body(
    request: EvalRequest, rows: list[dict[str, Any]], retriever: str | None
) -> dict[str, Any]:
    context: dict[str, Any] = {
        "top_k": request.top_k,
        "model": request.judge_model,
        "prompt": request.judge_prompt,
        "embedding_model": request.embedding_model,
        "retriever": retriever,
        "score_threshold": request.score_threshold,
        "language": request.language,
        "plan": request.plan,
        "relevance_level": request.relevance_level,
        "no_relevant": request.no_relevant,
    }
    if request.app is not None:
        scene, value = "app", request.app
    elif request.space is not None:
        scene, value = "recall", request.space
    else:
        scene, value = "dataset", None
    return {
        "scene_key": scene,
        "scene_value": value,
        "evaluate_metrics": split_specs(request.metrics),
        "context": {k: v for k, v in context.items() if v is not None},
        "datasets": rows,
        "parallel_num": min(request.max_concurrency, MAX_PARALLEL),
    }


def _report(client: Client, run_id: str, rows: int) -> EvaluationReport:
    info = client.runs.get(run_id)
    records = [ResultRecord.from_attributes(item) for item in client.runs.results(run_id)]
    seconds = 0.0
    if info.started_at is not None and info.finished_at is not None:
        seconds = (info.finished_at - info.started_at).total_seconds()
    report = EvaluationReport(records, info.metrics, rows, seconds, usage=info.cost or None)
    report.scales = scale_labels(info.metrics)
    return report


def _one_run(client: Client, body: dict[str, Any], label: str) -> EvaluationReport:
    created = client.runs.create(body)
    total = len(body["datasets"])
    with progress_bars(console, [(label, total)]) as (advance,):
        done = 0

        def progress(info: Any) -> None:
            nonlocal done
            now = int(info.progress.get("done", 0))
            advance(now - done)
            done = now

        info = client.runs.wait(created.run_id, progress, poll=0.3)
    if info.state != "done":  # not bad input: exit 1
        raise RagmeterError(
            f"run {created.run_id} on the server {info.state}: {info.error or 'no reason'}; "
            f"resume it with POST .../evaluate/runs/{created.run_id}/resume"
        )
    console.print(f"server run: {created.run_id}", highlight=False)
    return _report(client, created.run_id, total)


def run_remote(request: EvalRequest, server: str) -> Reports:
    """Evaluate on ``server``; one run per retriever in the recall scene."""
    from ragmeter.cli.eval_output import print_reports
    from ragmeter.cli.eval_request import load_rows
    from ragmeter.client import Client

    _check(request)
    dataset = load_rows(request)
    rows = [row.to_raw() for row in dataset]
    retrievers: list[str | None] = [None]
    if request.space is not None and request.app is None:
        retrievers = list(parse_retrievers(request.retriever or "vector"))
    reports: Reports = []
    try:
        with Client(api_base=api_base_of(server)) as client:
            for retriever in retrievers:
                label = retriever or request.app or ""
                body = _body(request, rows, retriever)
                reports.append((label, _one_run(client, body, f"on {server} {label}".rstrip())))
    except ClientError as exc:
        raise _refused(exc, server) from None
    print_reports(request, reports, len(dataset))
    return reports
