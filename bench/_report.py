"""Write a benchmark's section into docs/benchmarks.md, keeping the other sections."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
from importlib.metadata import version
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n\n"
    "Written by the scripts in `bench/`; do not edit the sections by hand. Each section says\n"
    "how it was measured. Peers run side by side in the same process and the same run, so\n"
    "ratios hold even on a noisy machine.\n"
)


def write_section(key: str, title: str, body: str) -> None:
    start, end = f"<!-- {key}:start -->", f"<!-- {key}:end -->"
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = f"{start}\n## {title}\n\n_Recorded {stamp} by `bench/{key}.py`._\n\n{body}\n{end}"
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    text = (
        pattern.sub(lambda _: section, text)
        if pattern.search(text)
        else f"{text.rstrip()}\n\n{section}\n"
    )
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")


def machine_line(*packages: str) -> str:
    """``Machine: x86_64, 2 cores, Python 3.11.7, <package> <version>, ...`` for a section."""
    parts = [f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"]
    parts += [f"{name} {version(name)}" for name in packages]
    return "Machine: " + ", ".join(parts) + "."
