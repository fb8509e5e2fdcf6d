"""The docs site's reference pages, written from the code so they cannot drift from it.

``scripts/reference_hook.py`` (an mkdocs hook) writes them into the docs folder at each build;
``tests/docs/test_reference.py`` builds them and checks every metric, command, route and setting
has its entry. Each page is a function returning Markdown: ``PAGES`` maps a page's path (under
the docs folder) to it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from docs_reference.cli import cli_page
from docs_reference.http_api import http_page
from docs_reference.markdown import GENERATED
from docs_reference.metrics import metrics_page
from docs_reference.settings import config_page

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
    """Write every page of ``PAGES`` under ``docs_dir``; the pages whose text changed. A page
    is replaced whole (written aside, then renamed): two builds at once never read half one."""
    changed = []
    for name, page in PAGES.items():
        path = docs_dir / name
        text = page()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            aside = path.with_name(f".{path.name}.{os.getpid()}")
            aside.write_text(text, encoding="utf-8")
            os.replace(aside, path)
            changed.append(path)
    return changed
