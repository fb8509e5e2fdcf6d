"""The reference pages of the docs site cover the code: every registered metric (and alias),
every command and option of the CLI, every route the service serves and every key of
``ragmeter.toml`` has an entry in the built HTML, in English and under ``/zh/``.

The site is built by ``mkdocs build --strict`` (a subprocess, as a user runs it) with the
project's plugins over a folder holding only the reference, which the project's hook
(``scripts/reference_hook.py``) writes from the code. What must be there is enumerated here
from the code itself, not from the generator, so a generator that drops something fails.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
from pydantic import BaseModel

from ragmeter.cli.app import app as cli_app
from ragmeter.config import Settings, StoreConfig
from ragmeter.metrics import metric_entries
from ragmeter.metrics.registry import RegistryEntry
from ragmeter.service.app import create_app
from ragmeter.service.permissions import app_routes

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "scripts" / "reference_hook.py"
PAGES = ("index", "metrics", "cli", "http-api", "configuration", "python-api")

#: the project's own site settings for these pages: material, suffix i18n (en, zh), mkdocstrings
CONFIG = """
site_name: ragmeter reference
docs_dir: {docs}
strict: true
use_directory_urls: true
theme:
  name: material
  font: false
markdown_extensions: [admonition, attr_list, md_in_html, tables, toc, pymdownx.superfences]
plugins:
  - search
  - i18n:
      docs_structure: suffix
      fallback_to_default: true
      reconfigure_material: true
      languages:
        - {{locale: en, default: true, name: English, build: true}}
        - {{locale: zh, name: 中文, build: true}}
  - mkdocstrings:
      default_handler: python
      handlers:
        python:
          paths: [{src}]
          options:
            docstring_style: sphinx
            show_source: false
            show_root_heading: true
            heading_level: 2
            filters: ["!^_"]
hooks:
  - {hook}
"""


@dataclass(frozen=True)
class Site:
    root: Path
    log: str

    def page(self, name: str, language: str = "") -> str:
        path = self.root / language / "reference" / name / "index.html"
        if name == "index":
            path = self.root / language / "reference" / "index.html"
        return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        docs = base / "docs"
        docs.mkdir()
        (docs / "index.md").write_text("# ragmeter\n\n[Reference](reference/index.md)\n")
        (docs / "index.zh.md").write_text("# ragmeter\n\n[参考](reference/index.md)\n")
        config = base / "mkdocs.yml"
        config.write_text(CONFIG.format(docs=docs, src=ROOT / "src", hook=HOOK), encoding="utf-8")
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mkdocs",
                "build",
                "--strict",
                "-f",
                str(config),
                "-d",
                str(base / "site"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        yield Site(base / "site", done.stderr)


def text_of(page: str) -> str:
    """The page's HTML with its entities decoded (``&lt;`` is ``<`` again)."""
    return html.unescape(page)


def sections(page: str, tags: str) -> dict[str, str]:
    """The page cut at each heading (of the levels ``tags`` matches: ``h3``, ``h[2-4]``)
    whose text is one code span: that text -> the HTML up to the next such heading."""
    marks = list(re.finditer(rf"<(?:{tags})[^>]*><code>(.*?)</code>", page))
    ends = [mark.start() for mark in marks[1:]] + [len(page)]
    return {
        html.unescape(mark.group(1)): page[mark.start() : end]
        for mark, end in zip(marks, ends, strict=True)
    }


def has_code(section: str, text: str) -> bool:
    return f"<code>{text}</code>" in html.unescape(section)


# -- what the code has ---------------------------------------------------------------------


def missing_metrics(page: str, entries: list[RegistryEntry]) -> list[str]:
    """Names and aliases without their entry in the metrics page."""
    found = sections(page, "h3")
    missing = []
    for entry in entries:
        section = found.get(entry.name)
        if section is None:
            missing.append(entry.name)
            continue
        missing += [f"{entry.name} alias {a}" for a in entry.aliases if not has_code(section, a)]
    return missing


def cli_paths() -> dict[str, list[str]]:
    """``ragmeter ...`` path of every command and group -> the names of its options."""
    root = typer.main.get_command(cli_app)
    found: dict[str, list[str]] = {}

    def walk(path: str, command: Any, parent: Any) -> None:
        ctx = command.context_class(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
        options = [opt for param in command.params if not param.hidden for opt in param.opts]
        found[path] = [o for o in options if o.startswith("-")]
        for name in getattr(command, "list_commands", lambda _: [])(ctx):
            sub = command.get_command(ctx, name)
            if not sub.hidden:
                walk(f"{path} {name}", sub, ctx)

    walk("ragmeter", root, None)
    return found


def missing_commands(page: str, commands: dict[str, list[str]]) -> list[str]:
    found = sections(page, "h[2-4]")
    missing = []
    for path, options in commands.items():
        section = found.get(path)
        if section is None:
            missing.append(path)
            continue
        missing += [f"{path} {o}" for o in options if not has_code(section, o)]
    return missing


def served_routes() -> list[str]:
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{Path(home) / 'ragmeter.db'}"
        api = create_app(Settings(store=StoreConfig(url=url)))
        try:
            return [f"{method} {path}" for method, path, _ in app_routes(api)]
        finally:
            api.state.services.manager.shutdown()
            api.state.services.kb.store.close()


def missing_routes(page: str, routes: list[str]) -> list[str]:
    return [route for route in routes if not has_code(page, route)]


def toml_keys(model: type[BaseModel] = Settings, section: str = "") -> list[tuple[str, str]]:
    """(section, key) of every setting; sections as the page heads them (``[server]``,
    ``[models.NAME]``, ``[[online.rules]]``)."""
    found = []
    for name, field in model.model_fields.items():
        if model is Settings and name == "source":
            continue
        sub = _model_in(field.annotation)
        if sub is None:
            found.append((section, name))
            continue
        origin = getattr(field.annotation, "__origin__", None)
        inner = f"{section}.{name}" if section else name
        inner += ".NAME" if origin is dict else "[]" if origin in (tuple, list) else ""
        found += toml_keys(sub, inner)
    return found


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def heading_of(section: str) -> str:
    name = section.replace("[]", "")
    return f"[[{name}]]" if section.endswith("[]") else f"[{name}]"


def missing_settings(page: str, keys: list[tuple[str, str]]) -> list[str]:
    found = sections(page, "h2")
    missing = []
    for section, key in keys:
        part = found.get(heading_of(section))
        if part is None or f"<td><code>{key}</code></td>" not in part:
            missing.append(f"{heading_of(section)} {key}")
    return missing


# -- the tests -----------------------------------------------------------------------------


def test_every_reference_page_is_built_in_english_and_chinese(site: Site) -> None:
    for name in PAGES:
        assert "<h1" in site.page(name), name
        assert "<h1" in site.page(name, "zh"), f"zh/{name}"
    assert "WARNING" not in site.log, site.log


def test_every_metric_and_alias_has_an_entry(site: Site) -> None:
    entries = metric_entries()
    assert len(entries) > 50
    for language in ("", "zh"):
        assert missing_metrics(site.page("metrics", language), entries) == []


def test_a_metric_the_page_lacks_is_reported(site: Site) -> None:
    """The check can fail: a metric registered after the build is missing from the page."""
    entries = metric_entries()
    extra = RegistryEntry("metric", "not_built", object, ("NotBuiltAlias",))
    page = site.page("metrics")
    assert missing_metrics(page, [*entries, extra]) == ["not_built"]
    renamed = RegistryEntry("metric", entries[0].name, object, ("SomeOtherAlias",))
    assert missing_metrics(page, [renamed]) == [f"{entries[0].name} alias SomeOtherAlias"]


def test_every_command_and_option_has_an_entry(site: Site) -> None:
    commands = cli_paths()
    assert {"ragmeter eval", "ragmeter runs list", "ragmeter space search"} <= set(commands)
    assert missing_commands(site.page("cli"), commands) == []
    assert missing_commands(site.page("cli"), {"ragmeter nonexistent": []}) == [
        "ragmeter nonexistent"
    ]


def test_every_route_has_an_entry_with_what_it_needs(site: Site) -> None:
    routes = served_routes()
    assert "POST /api/v2/serve/evaluate/evaluation" in routes
    page = site.page("http-api")
    assert missing_routes(page, routes) == []
    assert missing_routes(page, ["GET /api/v2/serve/nowhere"]) == ["GET /api/v2/serve/nowhere"]
    run_row = page.split("<code>POST /api/v2/serve/evaluate/evaluation</code>")[1].split("</tr>")[0]
    assert "<code>write_own</code>: admin, member" in run_row


def test_every_setting_has_an_entry_with_its_default(site: Site) -> None:
    keys = toml_keys()
    assert ("server", "workers") in keys and ("models.NAME", "base_url") in keys
    page = site.page("configuration")
    assert missing_settings(page, keys) == []
    assert missing_settings(page, [("server", "no_such_key")]) == ["[server] no_such_key"]
    row = page.split("<td><code>workers</code></td>")[1].split("</tr>")[0]
    assert "<code>2</code>" in row  # the default, from the model


def test_the_python_api_is_rendered_from_docstrings(site: Site) -> None:
    page = text_of(site.page("python-api"))
    for name in ("evaluate", "aevaluate", "EvaluationReport", "client.Client"):
        assert f'id="ragmeter.{name}"' in page, name
    assert "Blocking form of" in page  # evaluate's docstring


def test_the_site_config_wires_the_hook_and_lists_every_page() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- scripts/reference_hook.py" in config
    for name in PAGES:
        assert f"reference/{name}.md" in config, name
