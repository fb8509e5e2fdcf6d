"""Every docs page's code blocks, English and Chinese alike (and the README's): the blocks marked
``<!-- offline -->`` run as written, in order, in a fresh folder, one test per page (how:
``tests/block_runner.py``); every other block at least parses as its language (python compiles,
toml, json and yaml load, bash passes ``bash -n``)."""

from __future__ import annotations

import ast
import json
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.block_runner import make_folder, run_block
from tests.readme_blocks import (
    README,
    ROOT,
    WALKTHROUGH,
    Block,
    all_blocks,
    docs_pages,
    offline_blocks,
)

_PAGES = docs_pages()
_SHELLS = {"bash", "sh", "shell"}


def _page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _parses(block: Block) -> None:
    lang, code = block.lang, block.code
    if lang == "python":
        compile(code, str(block), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    elif lang == "toml":
        tomllib.loads(code)
    elif lang in ("json", "jsonl"):
        try:
            json.loads(code)
        except json.JSONDecodeError:  # JSON lines: one object a line
            for line in filter(str.strip, code.splitlines()):
                json.loads(line)
    elif lang in ("yaml", "yml"):
        yaml.safe_load(code)
    elif lang in _SHELLS:
        done = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
        assert done.returncode == 0, f"{block}: {done.stderr}"


def test_the_docs_have_pages() -> None:
    assert len(_PAGES) >= 5
    assert all(p.suffix == ".md" for p in _PAGES)


@pytest.mark.parametrize("page", [README, *_PAGES], ids=_page_id)
def test_every_block_parses_as_its_language(page: Path) -> None:
    for block in all_blocks(page):
        try:
            _parses(block)
        except (
            SyntaxError,
            ValueError,
        ) as err:  # toml, json, yaml errors are ValueErrors or YAMLErrors
            pytest.fail(f"{block} does not parse as {block.lang}: {err}")
        except yaml.YAMLError as err:
            pytest.fail(f"{block} does not parse as yaml: {err}")


def test_the_parser_rejects_broken_blocks() -> None:
    broken = {
        "python": "def f(:\n",
        "toml": "a = \n",
        "json": '{"a": }\n',
        "yaml": "a: [1\n",
        "bash": "if then fi\n",
    }
    for lang, code in broken.items():
        with pytest.raises((SyntaxError, ValueError, yaml.YAMLError, AssertionError)):
            _parses(Block(1, lang, code, README))


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in _PAGES if offline_blocks(path=p)], ids=_page_id)
def test_a_pages_offline_blocks_run_in_order(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_folder(tmp_path)
    for block in offline_blocks(path=page):
        run_block(block, folder, monkeypatch)


def test_the_walkthrough_runs_with_no_key() -> None:
    blocks = offline_blocks(path=WALKTHROUGH)
    text = WALKTHROUGH.read_text(encoding="utf-8")
    assert "https://github.com/eosphoros-ai/DB-GPT/tree/main/docs" in text
    walkthrough = next(b for b in blocks if "judge-server" in b.code and "app add" in b.code)
    assert "model add scripted" in walkthrough.code and "~/.ragmeter" not in walkthrough.code
    assert not any("shared/corpora" in b.code for p in _PAGES for b in offline_blocks(path=p))
    # the README's 20 offline blocks moved to the docs; the README keeps a quickstart of its own
    assert sum(len(offline_blocks(path=p)) for p in _PAGES) >= 20


def test_walkthrough_config_step_is_safe_twice(tmp_path: Path) -> None:
    """The walkthrough's config line, run again, changes nothing and breaks nothing."""
    folder = make_folder(tmp_path)
    block = next(b for b in offline_blocks(path=WALKTHROUGH) if "model add scripted" in b.code)
    line = next(x for x in block.code.splitlines() if x.startswith("ragmeter model add"))
    env = {**folder.env, "RAGMETER_HOME": str(folder.work / "twice-home")}
    for _ in range(2):
        subprocess.run(["bash", "-e", "-c", line], env=env, cwd=folder.work, check=True)
    text = (folder.work / "twice-home" / "ragmeter.toml").read_text(encoding="utf-8")
    assert text.count("[models.scripted]") == 1
    listed = subprocess.run(
        ["ragmeter", "model", "list"], env=env, capture_output=True, text=True, check=True
    )
    assert "scripted" in listed.stdout
