"""The install page agrees with pyproject.toml: its runtime table (English and Chinese) names
every ``[project] dependencies`` package and nothing else, its footprint table is there, and the
packages installed for tests only stay out of the runtime dependencies."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"en": ROOT / "docs" / "install.md", "zh": ROOT / "docs" / "install.zh.md"}
#: the heading of the runtime table, and of the footprint table, per language
RUNTIME = {"en": "## Runtime dependencies", "zh": "## 运行时依赖"}
FOOTPRINT = {"en": "## Footprint, measured", "zh": "## 安装开销（实测）"}
#: packages the issue names as for tests only, and the side environments' tools
TEST_ONLY = {
    "pytrec-eval-terrier",
    "pytrec-eval",
    "ragas",
    "deepeval",
    "playwright",
    "schemathesis",
    "pytest",
    "ranx",
    "dbgpt",
    "dbgpt-client",
}


def _project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        project: dict[str, object] = tomllib.load(f)["project"]
    return project


def _runtime() -> set[str]:
    deps = _project()["dependencies"]
    assert isinstance(deps, list)
    return {canonicalize_name(Requirement(d).name) for d in deps}


def _section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    end = re.search(r"^## ", rest, re.M)
    return rest if end is None else rest[: end.start()]


def _table_packages(section: str) -> set[str]:
    """The first column of the section's table, its header and rule left off."""
    rows = [line for line in section.splitlines() if line.startswith("|")]
    names = [row.split("|")[1].strip() for row in rows[2:]]
    return {canonicalize_name(name) for name in names}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_runtime_table_names_every_runtime_dependency(lang: str) -> None:
    section = _section(PAGES[lang].read_text(encoding="utf-8"), RUNTIME[lang])
    listed = _table_packages(section)
    runtime = _runtime()
    assert not runtime - listed, f"{PAGES[lang].name}: no row for {sorted(runtime - listed)}"
    assert not listed - runtime, (
        f"{PAGES[lang].name}: not a runtime dependency: {sorted(listed - runtime)}"
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_footprint_is_recorded(lang: str) -> None:
    section = _section(PAGES[lang].read_text(encoding="utf-8"), FOOTPRINT[lang])
    assert "scripts/install.sh" in section
    assert re.search(r"\d+(\.\d+)? GB", section), "the venv's size"
    assert re.search(r"\| \d+ \|", section), "the number of packages"
    assert re.search(r"\d+ (min|分)", section), "the wall time"


def test_test_only_packages_are_not_runtime_dependencies() -> None:
    assert not _runtime() & TEST_ONLY
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    dev = {canonicalize_name(Requirement(d).name) for d in extras["dev"]}
    assert {"pytrec-eval-terrier", "playwright", "schemathesis"} <= dev


def test_a_missing_row_is_caught() -> None:
    table = "| package | for |\n|---|---|\n| numpy | scores |\n| PyStemmer | stems |\n"
    assert _table_packages(table) == {"numpy", "pystemmer"}
    assert "torch" in _runtime() - _table_packages(table)
