"""``ragmeter app``: the applications the app scene evaluates."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.table import Table

from ragmeter.apps import AppStore, CallableAppConfig, HttpAppConfig, RagAppConfig
from ragmeter.apps.configs import AgentAppConfig, AnyAppConfig
from ragmeter.cli._common import console, handles_errors, validation_message
from ragmeter.config import load_settings
from ragmeter.errors import ConfigError, ConflictError
from ragmeter.knowledge.search import parse_retrievers
from ragmeter.knowledge.spaces import KnowledgeBase
from ragmeter.prompts.store import PromptStore

__all__ = ["app_app"]

app_app = typer.Typer(
    name="app",
    help="Apps to evaluate: a RagApp (space + prompt + model), an HTTP endpoint or a function.",
    no_args_is_help=True,
)


def _rag_config(
    space: str,
    model: str | None,
    model_base_url: str | None,
    api_key_env: str | None,
    prompt: str | None,
    top_k: int,
    retriever: str,
) -> RagAppConfig:
    if model is None:
        raise ConfigError("a RagApp needs --model: a [models.NAME] of ragmeter.toml")
    kb = KnowledgeBase()
    info = kb.space(space)
    if model_base_url is None:
        load_settings().model(model, hint="or give --model-base-url with the model id")
    if prompt is not None:
        PromptStore(kb.store).get(prompt, kind="answer")
    kinds = parse_retrievers(retriever)
    if len(kinds) != 1:
        raise ConfigError("a RagApp uses one retriever: vector, bm25 or hybrid")
    return RagAppConfig(
        space=info.name,
        model=model,
        base_url=model_base_url,
        api_key_env=api_key_env,
        prompt=prompt,
        top_k=top_k,
        retriever=kinds[0],
    )


@app_app.command("add")
@handles_errors
def add_command(
    name: Annotated[str, typer.Argument(help="The app's name.")],
    space: Annotated[str | None, typer.Option(help="RagApp: the knowledge space.")] = None,
    model: Annotated[
        str | None, typer.Option(help="RagApp: a \\[models.NAME], or the id at --model-base-url.")
    ] = None,
    model_base_url: Annotated[
        str | None, typer.Option(help="RagApp: OpenAI-compatible endpoint of --model.")
    ] = None,
    prompt: Annotated[
        str | None, typer.Option(help="RagApp: answer prompt code (default: built-in en/zh).")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, help="RagApp: chunks retrieved.")] = 5,
    retriever: Annotated[str, typer.Option(help="RagApp: vector, bm25 or hybrid.")] = "vector",
    url: Annotated[str | None, typer.Option(help="HttpApp: the endpoint to POST to.")] = None,
    query_key: Annotated[str, typer.Option(help="HttpApp: body key of the query.")] = "query",
    answer_key: Annotated[
        str, typer.Option(help="HttpApp: reply key of the answer (dotted path).")
    ] = "answer",
    contexts_key: Annotated[
        str, typer.Option(help="HttpApp: reply key of the contexts (dotted path).")
    ] = "contexts",
    api_key_env: Annotated[
        str | None, typer.Option(help="Variable holding the key (sent as a Bearer token).")
    ] = None,
    timeout: Annotated[float, typer.Option(min=0.1, help="HttpApp: seconds per request.")] = 60.0,
    function: Annotated[
        str | None, typer.Option("--callable", help="A Python function as module:function.")
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            help="Agent (with --model): the tools the model calls, an http(s) URL taking "
            '{"name", "arguments"} or a Python function module:function(name, arguments).'
        ),
    ] = None,
    max_steps: Annotated[
        int, typer.Option(min=1, max=100, help="Agent: model turns per row at most.")
    ] = 8,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite an app of the same name.")
    ] = False,
) -> None:
    """Register an app: --space with --model (RagApp), --url (HttpApp), --callable, or
    --tools with --model (an agent: the model calls the rows' tools through --tools)."""
    given = (("--space", space), ("--url", url), ("--callable", function), ("--tools", tools))
    chosen = [flag for flag, value in given if value]
    if len(chosen) != 1:
        raise ConfigError(
            "give exactly one of --space (with --model), --url, --callable or --tools (with "
            "--model)"
        )
    config: AnyAppConfig
    try:
        if space is not None:
            config = _rag_config(
                space, model, model_base_url, api_key_env, prompt, top_k, retriever
            )
        elif url is not None:
            config = HttpAppConfig(
                url=url,
                query_key=query_key,
                answer_key=answer_key,
                contexts_key=contexts_key,
                api_key_env=api_key_env,
                timeout=timeout,
            )
        elif tools is not None:
            if model is None:
                raise ConfigError("an agent needs --model: a [models.NAME] of ragmeter.toml")
            config = AgentAppConfig(
                model=model,
                base_url=model_base_url,
                api_key_env=api_key_env,
                tools=tools,
                max_steps=max_steps,
            )
        else:
            config = CallableAppConfig(target=function or "")
    except ValidationError as exc:
        raise ConfigError(validation_message(exc)) from None
    try:
        record = AppStore().add(name, config, replace=replace)
    except ConflictError as exc:
        raise ConflictError(f"{exc}, or give --replace to overwrite it") from None
    verb = "stored" if replace else "added"
    console.print(f"{verb} {record.kind} app '{record.name}' (id {record.id})", highlight=False)


@app_app.command("list")
@handles_errors
def list_command() -> None:
    """List the registered apps."""
    table = Table(title="apps", title_justify="left")
    for column in ("id", "name", "version", "kind", "settings"):
        table.add_column(column)
    for record in AppStore().apps():
        settings = {k: v for k, v in record.config.items() if k != "kind" and v is not None}
        table.add_row(
            str(record.id), record.name, str(record.version), record.kind, json.dumps(settings)
        )
    console.print(table)


@app_app.command("show")
@handles_errors
def show_command(
    name: Annotated[str, typer.Argument(help="App name or id; NAME@V for version V.")],
) -> None:
    """Print an app's settings as JSON (its newest version, or the one NAME@V names)."""
    record = AppStore().get(name)
    shown = {"id": record.id, "name": record.name, "version": record.version, **record.config}
    typer.echo(json.dumps(shown, indent=2))


@app_app.command("rm")
@handles_errors
def rm_command(name: Annotated[str, typer.Argument(help="App name or id.")]) -> None:
    """Remove an app."""
    record = AppStore().remove(name)
    console.print(f"removed app '{record.name}'", highlight=False)
