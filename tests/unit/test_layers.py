"""The layers show in the tree: interfaces > runs > domain > infrastructure > errors, no cycles
(the contracts are in pyproject.toml, checked by import-linter with no exceptions listed)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": str(lint.parent)},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_no_contract_lists_exceptions() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    assert {c["type"] for c in contracts} == {"layers", "acyclic_siblings"}
    for contract in contracts:
        assert "ignore_imports" not in contract, contract["name"]
        layers = contract.get("layers", [])
        assert not any("(" in layer for layer in layers), "optional layers hide missing ones"


def test_runs_config_is_light() -> None:
    """What an evaluation is can be read without the engine: no numpy, store or judge."""
    code = (
        "import sys; import ragmeter.runs.planning.config; "
        "heavy = [m for m in ('numpy', 'sqlalchemy', 'openai', 'faiss', 'torch') "
        "if m in sys.modules]; print(heavy)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
