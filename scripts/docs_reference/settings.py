"""The ``ragmeter.toml`` page: every key of the settings models, default and comment."""

from __future__ import annotations

import ast
import inspect
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from docs_reference.markdown import GENERATED, cell, code, prose, table
from ragmeter.config import Settings

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
