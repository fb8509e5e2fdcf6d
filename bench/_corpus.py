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
    places = [p / "shared" / "corpora" / "dbgpt-docs" for p in (ROOT, *ROOT.parents)]
    places.append(Path("/work/shared/corpora/dbgpt-docs"))  # the workspace's shared folder
    found = next((p for p in places if p.is_dir()), None)
    if found is not None:
        return found
    raise SystemExit("DB-GPT's docs corpus not found; set RAGMETER_DBGPT_DOCS to its folder")
