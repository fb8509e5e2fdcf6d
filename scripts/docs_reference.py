"""The docs site's reference pages, written from the code so they cannot drift from it.

``scripts/gen_reference_pages.py`` writes them into the site at build time (mkdocs-gen-files);
``tests/docs/test_reference.py`` builds them and checks every metric, command, route and setting
has its entry. Each page is a function returning Markdown: ``PAGES`` maps a page's path (under
the docs folder) to it.
"""

from __future__ import annotations

import ast
import inspect
import re
import tempfile
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from ragmeter.config import Settings, StoreConfig
from ragmeter.datasets import Row
from ragmeter.datasets._agent_items import Message, ToolCall
from ragmeter.errors import RagmeterError
from ragmeter.metrics import LLMEvaluationMetric
from ragmeter.metrics.registry import OBJECT_PARAMETERS, RegistryEntry, create_metric
from ragmeter.metrics.registry import metric_entries as registered_metrics

GENERATED = "<!-- written by scripts/docs_reference.py from the code: edit the code, not this -->"

# -- Markdown helpers ----------------------------------------------------------------------


def cell(text: object) -> str:
    """``text`` fit for one cell of a Markdown table: one line, no bar, no raw HTML."""
    one_line = " ".join(str(text).split())
    return one_line.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def code(text: object) -> str:
    """``text`` as inline code (a backtick inside widens the fence; a table does not split
    a cell at a bar inside code)."""
    value = " ".join(str(text).split())
    fence = "``" if "`" in value else "`"
    return f"{fence}{value}{fence}" if value else ""


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def prose(text: str) -> str:
    """A docstring as Markdown: reST's ``code`` is Markdown's code too and its indented
    literal blocks are Markdown's code blocks, but its ``::`` goes (``text::`` -> ``text:``),
    and ``<tag`` or a leading ``#`` would be read as HTML or a heading."""
    out = []
    for line in inspect.cleandoc(text).splitlines():
        if not line.startswith("    "):  # an indented line is code, shown as it is
            line = _TAG_START.sub("&lt;", line)
        if line.strip() == "::":
            continue
        if line.endswith("::"):
            line = line[:-1]
        out.append(("\\" + line) if line.lstrip().startswith("#") else line)
    return "\n".join(out)


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


# -- metrics -------------------------------------------------------------------------------

#: a metric's family, by the module its factory is defined in (the first prefix that matches)
FAMILIES: tuple[tuple[str, str, str], ...] = (
    (
        "ragmeter.metrics.retrieval",
        "Retrieval",
        "Rankings against relevance judgements (qrels "
        "or reference contexts), as trec_eval computes them; no judge.",
    ),
    (
        "ragmeter.metrics.llm.agent",
        "Agent (judged)",
        "Conversations and tool use scored by an LLM judge.",
    ),
    ("ragmeter.metrics.llm", "Generation (judged)", "Responses scored by an LLM judge."),
    (
        "ragmeter.metrics.agent",
        "Agent (tool calls)",
        "Tool calls compared with the reference calls; no judge.",
    ),
    (
        "ragmeter.metrics.reference_free",
        "Reference-free",
        "Checks of the response or retrieval alone: no reference, no judge.",
    ),
)
PLUGINS = ("Other", "Registered outside ragmeter's own metrics (a plugin or your code).")

#: a metric that cannot be built from its name alone: a spec that builds it
EXAMPLE_SPECS = {"criteria": "criteria(criteria=correct)"}

#: a value for each row field, filled in one by one to learn what a metric needs
_FILL: dict[str, Any] = {
    "query": "a question",
    "doc_name": "a document",
    "reference_contexts": ["a reference passage"],
    "reference": "a reference answer",
    "response": "an answer",
    "retrieved_contexts": ["a retrieved passage"],
    "retrieved_ids": ["d1"],
    "reference_ids": ["d1"],
    "reference_relevance": {"d1": 1},
    "messages": (Message("user", "hello"), Message("assistant", "hi")),
    "reference_tool_calls": (ToolCall("search"),),
    "reference_topics": ["a topic"],
}


def metric_entries() -> list[RegistryEntry]:
    """Every registered metric, by name (the registry's own list)."""
    return registered_metrics()


def family_of(entry: RegistryEntry) -> tuple[str, str]:
    module = getattr(entry.factory, "__module__", "") or ""
    for prefix, title, blurb in FAMILIES:
        if module == prefix or module.startswith(prefix + "."):
            return title, blurb
    return PLUGINS


def build_example(entry: RegistryEntry) -> Any | None:
    """The metric built with its defaults (``@0.5`` for one whose ``@`` is not a rank), or
    None when it needs more than a name gives."""
    spec = EXAMPLE_SPECS.get(entry.name, entry.name + ("@0.5" if entry.takes_at else ""))
    try:
        return create_metric(spec)
    except (RagmeterError, TypeError, ValueError):
        return None


def metric_needs(metric: Any) -> list[str]:
    """The row fields ``metric`` needs, measured: starting from a row with an empty query
    (built unvalidated: a valid row has a query),
    each field it says it lacks is filled in, until it lacks nothing."""
    filled: dict[str, Any] = {"query": ""}
    needs: list[str] = []
    for _ in range(len(_FILL) + 1):
        missing = metric.missing_fields(Row.model_construct(**filled))
        if missing is None:
            return needs
        field = missing.split()[0]
        if field not in _FILL or filled.get(field):
            needs.append(missing)  # a need no row field of ours fills: said as it is
            return needs
        needs.append(missing)
        filled[field] = _FILL[field]
    return needs


@dataclass(frozen=True)
class Option:
    name: str
    kind: str
    default: str


def _annotation(parameter: inspect.Parameter) -> str:
    note = parameter.annotation
    if note is inspect.Parameter.empty:
        return ""
    return note if isinstance(note, str) else getattr(note, "__name__", str(note))


def _signatures(factory: Callable[..., Any]) -> Iterator[inspect.Signature]:
    """The factory's signature, then (while it passes ``**kwargs`` on) its bases' ``__init__``."""
    if not inspect.isclass(factory):
        yield inspect.signature(factory)
        return
    for cls in factory.__mro__:
        init = cls.__dict__.get("__init__")
        if init is None or cls is object:
            continue
        signature = inspect.signature(init)
        yield signature
        kinds = {p.kind for p in signature.parameters.values()}
        if inspect.Parameter.VAR_KEYWORD not in kinds:
            return


def metric_options(entry: RegistryEntry) -> list[Option]:
    """Parameters a spec may give (``name(key=value)``), with their defaults; ``top_k`` and
    ``at`` are the ``@`` of the spec, objects come from the evaluation."""
    found: dict[str, Option] = {}
    skip = {"self", "top_k", "at", *OBJECT_PARAMETERS}
    for signature in _signatures(entry.factory):
        for p in signature.parameters.values():
            if p.name in skip or p.name in found or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            default = "required" if p.default is p.empty else repr(p.default)
            found[p.name] = Option(p.name, _annotation(p), default)
    return list(found.values())


def scale_text(scale: tuple[float | None, float | None] | None) -> str:
    if scale is None:
        return "not declared"
    low, high = ("" if v is None else f"{v:g}" for v in scale)
    return f"{low or '-∞'} to {high or '∞'}"


def metric_section(entry: RegistryEntry) -> str:
    metric = build_example(entry)
    cls = entry.factory if inspect.isclass(entry.factory) else type(metric)
    judged = isinstance(metric, LLMEvaluationMetric) or (
        inspect.isclass(cls) and issubclass(cls, LLMEvaluationMetric)
    )
    cut = "`@k`, a rank cut-off" if entry.takes_k else "`@x`" if entry.takes_at else "none"
    needs = metric_needs(metric) if metric is not None else []
    facts = [
        ["aliases", ", ".join(code(a) for a in entry.aliases) or "none"],
        ["scale", cell(scale_text(getattr(cls, "scale", None)))],
        ["needs", ", ".join(code(n) for n in needs) or "nothing of the row"],
        ["judge", "an LLM judge" if judged else "none"],
        ["cut-off", cut],
    ]
    parts = [f"### `{entry.name}`", "", *(f"- **{k}**: {v}" for k, v in facts), ""]
    doc = inspect.getdoc(entry.factory) or entry.description
    if doc:
        parts += [prose(doc), ""]
    options = metric_options(entry)
    if options:
        rows = [[code(o.name), code(o.kind), code(o.default)] for o in options]
        parts += [
            "Options (`name(key=value, ...)`):",
            "",
            table(["option", "type", "default"], rows),
            "",
        ]
    return "\n".join(parts)


def metrics_page() -> str:
    groups: dict[tuple[str, str], list[RegistryEntry]] = {}
    for entry in metric_entries():
        groups.setdefault(family_of(entry), []).append(entry)
    order = [(title, blurb) for _, title, blurb in FAMILIES] + [PLUGINS]
    parts = [
        GENERATED,
        "# Metrics",
        "",
        "Every metric of the registry (`ragmeter metrics` lists them too). A metric is named by "
        "its name or an alias, with options and a cut-off: `ndcg@10`, "
        "`mrr(match=overlap)@5`, `iprec@0.1`. *Needs* is what a row must hold for a score "
        "(else the row's result is null, with the reason); *scale* the range of a score.",
        "",
    ]
    for family in order:
        if family not in groups:
            continue
        parts += [f"## {family[0]}", "", family[1], ""]
        parts += [metric_section(entry) for entry in groups[family]]
    return "\n".join(parts)


# -- command line --------------------------------------------------------------------------


def cli_root() -> Any:
    """The ``ragmeter`` command as typer builds it (typer keeps its own copy of click, so
    commands are read through their methods, not click's classes)."""
    import typer.main

    from ragmeter.cli.app import app

    return typer.main.get_command(app)


@dataclass(frozen=True)
class Command:
    path: str
    command: Any
    ctx: Any

    @property
    def is_group(self) -> bool:
        return hasattr(self.command, "list_commands")


def cli_commands(root: Any | None = None) -> list[Command]:
    """Every command and group under ``ragmeter``, depth first (lazy groups loaded)."""
    found: list[Command] = []

    def walk(path: str, command: Any, parent: Any) -> None:
        ctx = command.context_class(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
        found.append(Command(path, command, ctx))
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(f"{path} {name}", sub, ctx)

    walk("ragmeter", root or cli_root(), None)
    return found


def _help_text(text: str | None) -> str:
    """Help as typer shows it: rich's escaped ``\\[`` is a plain bracket."""
    return (text or "").replace("\\[", "[").replace("\b", "")


@dataclass(frozen=True)
class Param:
    names: str
    kind: str
    default: str
    help: str


def param_of(param: Any, ctx: Any) -> Param | None:
    """What ``--help`` says of a parameter: its names, type, default and help (None: hidden)."""
    record = param.get_help_record(ctx)
    if record is None:
        return None
    names, text = record
    kind = ""
    if names.endswith(">") and " <" in names:
        names, kind = names[:-1].rsplit(" <", 1)
    elif getattr(param, "is_flag", False):
        kind = "flag"
    default, notes = "", []
    text = _help_text(text)
    if text.endswith("]") and "[" in text:
        cut = text.rindex("[")
        for note in text[cut + 1 : -1].split("; "):
            if note.startswith("default: "):
                default = note.removeprefix("default: ")
            else:
                notes.append(note)
        text = text[:cut].rstrip() + (f" ({', '.join(notes)})" if notes else "")
    return Param(names, kind, default, text)


def command_section(found: Command) -> str:
    command, ctx, path = found.command, found.ctx, found.path
    usage = " ".join([path, *command.collect_usage_pieces(ctx)])
    depth = path.count(" ")
    heading = "#" * min(depth + 1, 4) if depth else "##"
    parts = [f"{heading} `{path}`", "", f"```text\n{usage}\n```", ""]
    if command.help:
        parts += [prose(_help_text(command.help)), ""]
    rows = []
    for param in command.params:
        described = param_of(param, ctx)
        if described is not None:
            rows.append(
                [
                    ", ".join(code(n.strip()) for n in described.names.split(",")),
                    cell(described.kind),
                    code(described.default),
                    cell(described.help),
                ]
            )
    if rows:
        parts += [table(["argument or option", "type", "default", "description"], rows), ""]
    return "\n".join(parts)


def cli_page() -> str:
    parts = [
        GENERATED,
        "# Command line",
        "",
        "Every command of `ragmeter`, with its arguments and options (`ragmeter COMMAND --help` "
        "prints the same). Exit codes: 0 success, 1 a gate or check failed, 2 bad input or "
        "configuration.",
        "",
    ]
    parts += [command_section(found) for found in cli_commands()]
    return "\n".join(parts)


# -- HTTP API ------------------------------------------------------------------------------

_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Service:
    """The service's OpenAPI schema and every (method, path) it serves, in or out of it."""

    schema: dict[str, Any]
    served: list[tuple[str, str]]


def service() -> Service:
    """The service as ``ragmeter serve`` builds it, over a throwaway store."""
    from ragmeter.service.app import create_app
    from ragmeter.service.permissions import app_routes

    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{Path(home) / 'ragmeter.db'}"
        app = create_app(Settings(store=StoreConfig(url=url)))
        found = app.state.services
        try:
            schema: dict[str, Any] = app.openapi()
            served = [(method, path) for method, path, _ in app_routes(app)]
        finally:
            found.manager.shutdown()
            found.kb.store.close()
    return Service(schema, served)


def _model_name(body: dict[str, Any] | None, models: dict[str, Any]) -> str:
    """The model a request or response body is (``Result[RunInfo]``), from its schema."""
    if not body:
        return ""
    content: dict[str, Any] = body.get("content", {})
    first: dict[str, Any] = next(iter(content.values()), {})
    schema: dict[str, Any] = first.get("schema", {})
    ref = schema.get("$ref") or schema.get("items", {}).get("$ref", "")
    name = ref.rsplit("/", 1)[-1]
    if "multipart/form-data" in content:
        return "form: " + ", ".join(models.get(name, {}).get("properties", {}))
    name = models.get(name, {}).get("title", name)
    if schema.get("type") == "array" and name:
        return f"list[{name}]"
    return name or str(schema.get("type", ""))


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    summary: str
    tag: str
    request: str
    response: str
    role: str


def _needs(method: str, path: str) -> str:
    from ragmeter.service.permissions import GRANTS, ROUTES

    rule = ROUTES.get((method, path))
    if rule is None:
        return "refused to all (no permission entry)"
    if rule.action is None:
        return "no key"
    roles = ", ".join(role.value for role, grants in GRANTS.items() if rule.action in grants)
    own = " (own)" if rule.owned else ""
    return f"`{rule.action.value}`{own}: {roles}"


def http_routes(schema: dict[str, Any]) -> list[Route]:
    """Every operation of the OpenAPI schema, in its order."""
    found = []
    models = schema.get("components", {}).get("schemas", {})
    for path, item in schema.get("paths", {}).items():
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            ok = next(
                (r for code_, r in op.get("responses", {}).items() if code_.startswith("2")), None
            )
            found.append(
                Route(
                    method.upper(),
                    path,
                    op.get("summary", ""),
                    (op.get("tags") or ["other"])[0],
                    _model_name(op.get("requestBody"), models),
                    _model_name(ok, models),
                    _needs(method.upper(), path),
                )
            )
    return found


def other_routes(served: Service) -> list[tuple[str, str]]:
    """Routes served but left out of the OpenAPI schema (DB-GPT's ``/api/v1`` routes, OTLP's
    ``/v1/traces``, the dashboard's pages and files, the schema and its page)."""
    listed = {(m.upper(), p) for p, item in served.schema.get("paths", {}).items() for m in item}
    return [(m, p) for m, p in served.served if (m, p) not in listed]


def http_page() -> str:
    served = service()
    routes = http_routes(served.schema)
    parts = [
        GENERATED,
        "# HTTP API",
        "",
        "Every route of `ragmeter serve`, from its OpenAPI schema (a running server serves it "
        "at `/openapi.json` and `/docs`). Calls carry `Authorization: Bearer KEY`; *needs* is "
        "the action the key's role must grant and the roles that grant it (*own*: a member "
        "changes only what they made).",
        "",
    ]
    by_tag: dict[str, list[Route]] = {}
    for route in routes:
        by_tag.setdefault(route.tag, []).append(route)
    for tag, found in by_tag.items():
        rows = [
            [
                code(f"{r.method} {r.path}"),
                cell(r.summary),
                code(r.request),
                code(r.response),
                r.role,
            ]
            for r in found
        ]
        parts += [
            f"## {tag}",
            "",
            table(["route", "summary", "request", "response", "needs"], rows),
            "",
        ]
    others = [[code(f"{m} {p}"), _needs(m, p)] for m, p in other_routes(served)]
    parts += [
        "## Outside the schema",
        "",
        "Served but not in the OpenAPI schema: DB-GPT's `/api/v1` routes (its page and "
        "client), OTLP's `/v1/traces`, the dashboard's pages and files, the schema and its page.",
        "",
        table(["route", "needs"], others),
        "",
    ]
    return "\n".join(parts)


# -- ragmeter.toml -------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingKey:
    section: str
    key: str
    kind: str
    default: str
    description: str


def comments_of(model: type[BaseModel]) -> dict[str, str]:
    """Each field's ``#:`` comment: the lines just above it, or, for a field right below
    another with no line between, that field's (one comment for a group: ``max_labels`` and
    ``max_labels_mb``)."""
    source = inspect.getsource(model)
    lines = source.splitlines()
    tree = ast.parse(source)
    found: dict[str, str] = {}
    previous: tuple[int, str] | None = None  # (last line, comment) of the field above
    for node in getattr(tree.body[0], "body", []):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above: list[str] = []
        index = node.lineno - 2
        while index >= 0 and lines[index].strip().startswith("#:"):
            above.insert(0, lines[index].strip()[2:].strip())
            index -= 1
        comment = " ".join(above)
        if not comment and previous is not None and previous[0] == node.lineno - 1:
            comment = previous[1]
        if comment:
            found[node.target.id] = comment
        previous = (node.end_lineno or node.lineno, comment)
    return found


def _type_name(annotation: Any) -> str:
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    return text.replace("typing.", "").replace("ragmeter.config.", "")


def _default(field: Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.get_default(call_default_factory=True)
    return "" if isinstance(value, BaseModel) else repr(value)


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The settings model of a field that is one, or a table or list of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def settings_keys(model: type[BaseModel] = Settings, section: str = "") -> list[SettingKey]:
    """Every key of ``ragmeter.toml``: each section's, and those of tables of tables
    (``[models.NAME]``, ``[[online.rules]]``)."""
    found: list[SettingKey] = []
    comments = comments_of(model)
    for name, field in model.model_fields.items():
        if model is Settings and name == "source":
            continue  # set by the loader: the file read
        sub = _submodel(field.annotation)
        if sub is not None:
            origin = typing.get_origin(field.annotation)
            inner = name if not section else f"{section}.{name}"
            if origin is dict:
                inner += ".NAME"
            elif origin in (tuple, list):
                inner += "[]"
            found += settings_keys(sub, inner)
            continue
        description = field.description or comments.get(name, "")
        found.append(
            SettingKey(section, name, _type_name(field.annotation), _default(field), description)
        )
    return found


def section_doc(section: str) -> str:
    model: type[BaseModel] = Settings
    for part in (p.removesuffix("[]") for p in section.split(".")):
        if part == "NAME":
            continue
        annotation = model.model_fields[part].annotation
        sub = _submodel(annotation)
        if sub is None:
            return ""
        model = sub
    own = model.__dict__.get("__doc__")  # not pydantic BaseModel's own
    return inspect.cleandoc(own) if own else ""


def section_title(section: str) -> str:
    """``[server]``, ``[models.NAME]``; ``[[online.rules]]`` for a list of tables."""
    if not section:
        return "top level"
    name = section.replace("[]", "")
    return f"[[{name}]]" if section.endswith("[]") else f"[{name}]"


def _above(key: SettingKey, doc: str) -> str:
    return "see the section's text above" if f"``{key.key}``" in doc else ""


def config_page() -> str:
    parts = [
        GENERATED,
        "# ragmeter.toml",
        "",
        "Every key of `ragmeter.toml` (in `$RAGMETER_HOME`, `~/.ragmeter` by default), by "
        "section, with its type and default; every section is optional. `[models.NAME]` "
        "declares a model named NAME; `[[online.rules]]` is a list of tables.",
        "",
    ]
    sections: dict[str, list[SettingKey]] = {}
    for key in settings_keys():
        sections.setdefault(key.section, []).append(key)
    for section, keys in sections.items():
        title = section_title(section)
        parts += [f"## `{title}`", ""]
        doc = section_doc(section)
        if doc:
            parts += [prose(doc), ""]
        rows = [
            [code(k.key), code(k.kind), code(k.default), cell(k.description or _above(k, doc))]
            for k in keys
        ]
        parts += [table(["key", "type", "default", "description"], rows), ""]
    return "\n".join(parts)


# -- Python API ----------------------------------------------------------------------------

#: what the Python API page renders with mkdocstrings, in this order
PYTHON_OBJECTS = (
    "ragmeter.evaluate",
    "ragmeter.aevaluate",
    "ragmeter.gate",
    "ragmeter.load_run",
    "ragmeter.evaluate_trec",
    "ragmeter.load_dataset",
    "ragmeter.Dataset",
    "ragmeter.Row",
    "ragmeter.EvaluationReport",
    "ragmeter.ResultRecord",
    "ragmeter.TrecEvaluation",
    "ragmeter.metrics.register_metric",
    "ragmeter.client.Client",
    "ragmeter.client.AsyncClient",
    "ragmeter.errors.RagmeterError",
)


def python_page() -> str:
    parts = [
        GENERATED,
        "# Python API",
        "",
        "The names `import ragmeter` gives (`ragmeter.__all__`), the metric decorator and the "
        "service's client, from their docstrings.",
        "",
    ]
    for name in PYTHON_OBJECTS:
        parts += [f"::: {name}", ""]
    return "\n".join(parts)


def index_page() -> str:
    return "\n".join(
        [
            GENERATED,
            "# Reference",
            "",
            "Written from the code at each build of this site, so it says what the code does:",
            "",
            "- [Metrics](metrics.md): every metric, its aliases, scale, needs and options;",
            "- [Command line](cli.md): every `ragmeter` command and option;",
            "- [HTTP API](http-api.md): every route of the service and the role it needs;",
            "- [ragmeter.toml](configuration.md): every setting and its default;",
            "- [Python API](python-api.md): `ragmeter.evaluate`, the report, the client.",
            "",
        ]
    )


PAGES: dict[str, Callable[[], str]] = {
    "reference/index.md": index_page,
    "reference/metrics.md": metrics_page,
    "reference/cli.md": cli_page,
    "reference/http-api.md": http_page,
    "reference/configuration.md": config_page,
    "reference/python-api.md": python_page,
}


def write_pages(docs_dir: Path) -> list[Path]:
    """Write every page of ``PAGES`` under ``docs_dir``; the pages whose text changed."""
    changed = []
    for name, page in PAGES.items():
        path = docs_dir / name
        text = page()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
