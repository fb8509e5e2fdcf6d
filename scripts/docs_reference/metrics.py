"""The metrics page: every metric of the registry by family, with what it needs."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from docs_reference.markdown import GENERATED, cell, code, prose, table
from ragmeter.datasets import Row
from ragmeter.datasets._agent_items import Message, ToolCall
from ragmeter.errors import RagmeterError
from ragmeter.metrics import LLMEvaluationMetric
from ragmeter.metrics.registry import OBJECT_PARAMETERS, RegistryEntry, create_metric
from ragmeter.metrics.registry import metric_entries as registered_metrics

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


def type_text(hint: Any) -> str:
    """A parameter's type as a user writes its value: a ``Literal``'s values spelled out."""
    if isinstance(hint, str):
        return hint
    if typing.get_origin(hint) is typing.Literal:
        return " | ".join(str(value) for value in typing.get_args(hint))
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " | ".join(type_text(arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return "None"
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _annotation(parameter: inspect.Parameter) -> str:
    note = parameter.annotation
    return "" if note is inspect.Parameter.empty else type_text(note)


def _signature(function: Callable[..., Any]) -> inspect.Signature:
    """Its signature with the annotations evaluated (as written, if one cannot be)."""
    try:
        return inspect.signature(function, eval_str=True)
    except (NameError, TypeError, SyntaxError):
        return inspect.signature(function)


def _signatures(factory: Callable[..., Any]) -> Iterator[inspect.Signature]:
    """The factory's signature, then (while it passes ``**kwargs`` on) its bases' ``__init__``."""
    if not inspect.isclass(factory):
        yield _signature(factory)
        return
    for cls in factory.__mro__:
        init = cls.__dict__.get("__init__")
        if init is None or cls is object:
            continue
        signature = _signature(init)
        yield signature
        kinds = {p.kind for p in signature.parameters.values()}
        if inspect.Parameter.VAR_KEYWORD not in kinds:
            return


def default_text(value: Any) -> str:
    """A default as a spec writes it (``match=auto``, ``judged_only=false``)."""
    if value is inspect.Parameter.empty:
        return "required"
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if value == "" else str(value)


def metric_options(entry: RegistryEntry) -> list[Option]:
    """Parameters a spec may give (``name(key=value)``), with their defaults; ``top_k`` and
    ``at`` are the ``@`` of the spec, objects come from the evaluation."""
    found: dict[str, Option] = {}
    skip = {"self", "top_k", "at", *OBJECT_PARAMETERS}
    for signature in _signatures(entry.factory):
        for p in signature.parameters.values():
            if p.name in skip or p.name in found or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            found[p.name] = Option(p.name, _annotation(p), default_text(p.default))
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
