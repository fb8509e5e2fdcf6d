"""Write the blocking client (src/ragmeter/client/sync.py) from the async one (aio.py), so the
client is written once: unasync drops ``async``/``await`` and renames ``AsyncX`` to ``X``, then
ruff fixes and formats the result as the project's own code.

    python scripts/unasync_client.py          # regenerate sync.py
    python scripts/unasync_client.py --check  # exit 1 if sync.py is not what aio.py gives
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
import tempfile
from pathlib import Path

import unasync  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "src" / "ragmeter" / "client"
SOURCE = CLIENT / "aio.py"
TARGET = CLIENT / "sync.py"

#: names unasync's defaults do not cover (it would make ``AsyncClient`` ``SyncClient``)
REPLACEMENTS = {
    "AsyncClient": "Client",  # ours and httpx's
    "AsyncBaseTransport": "BaseTransport",
    "AsyncRuns": "Runs",
    "AsyncSpaces": "Spaces",
    "AsyncPrompts": "Prompts",
    "AsyncApps": "Apps",
    "AsyncDatasets": "Datasets",
    "AsyncUsers": "Users",
    "AsyncMonitor": "Monitor",
    "aclose": "close",
    "asyncio": "time",  # ``from asyncio import sleep``
}

HEADER = '''"""``Client``: the service from blocking code, every resource as plain methods.

Generated from ``aio.py`` by ``python scripts/unasync_client.py``: do not edit; change
``aio.py`` and regenerate (a test checks the two agree)."""
'''


def _module_docstring_end(text: str) -> int:
    """Where the source's module docstring ends (it is replaced by ``HEADER``)."""
    if not text.startswith('"""'):
        raise SystemExit(f"{SOURCE} must start with its module docstring")
    return text.index('"""', 3) + 3


def _ruff(args: list[str], text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(TARGET), "-"],
        input=text, capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ruff {args[0]} failed on the generated client:\n{done.stderr}")
    return done.stdout


def generate() -> str:
    """The text ``sync.py`` must hold for the current ``aio.py``."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "aio.py"
        source.write_text(SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
        rule = unasync.Rule("/aio.py", "/sync.py", additional_replacements=REPLACEMENTS)
        unasync.unasync_files([str(source)], [rule])
        text = (Path(tmp) / "sync.py").read_text(encoding="utf-8")
    text = HEADER + text[_module_docstring_end(text) + 1 :]
    text = _ruff(["check", "--fix-only", "--unsafe-fixes", "--exit-zero"], text)
    return _ruff(["format"], text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    check = parser.parse_args().check
    text = generate()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if check:
        if text == current:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(keepends=True), text.splitlines(keepends=True),
            "sync.py (committed)", "sync.py (generated from aio.py)",
        )  # fmt: skip
        sys.stdout.writelines(diff)
        print("\nsync.py is out of date: run python scripts/unasync_client.py", file=sys.stderr)
        return 1
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
