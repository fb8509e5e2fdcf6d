"""Where DB-GPT's documentation corpus is: ``shared/corpora/dbgpt-docs`` beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def dbgpt_docs() -> Path:
    """The corpus folder (``en/`` and ``zh/``); ``RAGMETER_DBGPT_DOCS`` overrides the search."""
    given = os.environ.get("RAGMETER_DBGPT_DOCS")
    if given:
        return Path(given)
    for parent in (ROOT, *ROOT.parents):
        candidate = parent / "shared" / "corpora" / "dbgpt-docs"
        if candidate.is_dir():
            return candidate
    raise SystemExit("DB-GPT's docs corpus not found; set RAGMETER_DBGPT_DOCS to its folder")
