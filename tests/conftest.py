from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test (and the commands it starts) gets its own data folder, never ~/.ragmeter."""
    path = tmp_path_factory.mktemp("ragmeter-home")
    monkeypatch.setenv("RAGMETER_HOME", str(path))
    return path
