"""The README's code blocks marked ``<!-- offline -->`` run as written, offline, in order, from an
empty folder, as a reader who copies them into a shell after ``source .venv/bin/activate`` would
(how: ``tests/block_runner.py``). Every file a block reads, it or a block before it writes.
"""

from __future__ import annotations

import pytest

from tests.block_runner import Folder, make_folder, run_block
from tests.readme_blocks import README, Block, offline_blocks


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Folder:
    return make_folder(tmp_path_factory.mktemp("readme"))


def test_the_readme_marks_its_offline_blocks() -> None:
    blocks = offline_blocks()
    first = blocks[0]
    assert first.lang == "bash" and first.code.startswith("cat > data.jsonl <<'EOF'\n")
    text = README.read_text(encoding="utf-8")
    row = text.index('```json\n{"query": ')  # a row's shape, shown before the first command
    assert row < text.index("<!-- offline -->\n```")
    for field in ("query", "response", "contexts", "retrieved_ids", "reference", "reference_ids"):
        assert f'"{field}": ' in text[row : text.index("```\n", row + 8)]
    assert not any("shared/corpora" in b.code for b in blocks)  # a reader has no ../shared
    assert {b.lang for b in blocks} == {"bash", "python"}


@pytest.mark.slow
@pytest.mark.parametrize("block", offline_blocks(), ids=str)
def test_offline_block_runs_as_written(
    block: Block, folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_block(block, folder, monkeypatch)
