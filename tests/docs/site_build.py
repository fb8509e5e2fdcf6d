"""The documentation site, built once per test module: ``build_site`` builds it as ``.venv/bin/mkdocs build --strict`` does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"

__all__ = ["MKDOCS", "ROOT", "build_site"]


def build_site(dest: Path) -> str:
    """Build the site into ``dest`` with ``mkdocs build --strict`` and return mkdocs' log.

    Fails the calling test with mkdocs' output when the build fails or logs a warning."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(dest)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, "mkdocs logged warnings:\n" + "\n".join(warnings)
    return log
