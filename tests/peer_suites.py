"""The reference implementations' own test data (``shared/peer_suites``), found beside the
checkout or in the workspace; read in place, never copied into the project."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["peer_suites", "trec_eval_file"]


def peer_suites() -> Path:
    """The ``peer_suites`` folder; skips the test when it is absent (a failure under CI)."""
    places = [p / "shared" / "peer_suites" for p in (ROOT, *ROOT.parents)]
    found = next((p for p in places if p.is_dir()), None)
    if found is None:
        pytest.skip("the peer suites (shared/peer_suites) are not beside the checkout")
    return found


def trec_eval_file(name: str) -> Path:
    """One file of trec_eval's test folder (``qrels.test``, ``out.test.aq``, ...)."""
    return peer_suites() / "trec_eval" / name
