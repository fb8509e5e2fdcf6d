"""Where the human-labelled judge suites are: ``$RAGMETER_JUDGE_SUITES``, else
``shared/judge_suites`` in the checkout's folder or one above it. Never copied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def judge_suites() -> Path:
    """The suites' folder; a skip (a failure in CI) when it is not there."""
    given = os.environ.get("RAGMETER_JUDGE_SUITES")
    places = [Path(given)] if given else []
    places += [p / "shared" / "judge_suites" for p in (ROOT, *ROOT.parents)]
    found = next((p for p in places if (p / "ragtruth").is_dir()), None)
    if found is None:
        pytest.skip("shared/judge_suites not found in the checkout's folder or above it")
    return found
