"""A mkdocs hook: before the site's files are collected, the reference pages are written into
``docs/reference/`` from the code (``scripts/docs_reference/``; git ignores them).

They are real files rather than mkdocs-gen-files' virtual ones because mkdocs-static-i18n
(1.3) localises only files under ``docs_dir``: a virtual page is left out of every language.
A page is rewritten only when its text changed, so ``mkdocs serve`` does not rebuild forever.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent / "src"))  # the reference of this checkout's code

from docs_reference import write_pages  # noqa: E402  (the folders above are on the path now)


def on_config(config: Any) -> Any:
    write_pages(Path(config["docs_dir"]))
    return config
