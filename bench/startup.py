"""Start-up: how long a user waits for ``import ragmeter``, ``ragmeter --help``, ``ragmeter
metrics`` and ``ragmeter space search`` (the local model embeds the query), each a fresh
process, beside bare ``python -c pass`` and ``python -c "import fastapi"``.

The commands take turns in one loop, several rounds, so outside load hits them alike; each
is scored by its best round (its median is shown too). ``space search`` runs on the demo
space, built once before the loop in a temporary ``$RAGMETER_HOME``.

Run: ``.venv/bin/python bench/startup.py``; it rewrites its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import machine_line, write_section  # bench/ is on sys.path when the script runs

#: import and --help may cost at most this much beyond bare Python (seconds)
OVER_PYTHON_GOAL = 0.3
#: space search, process start to exit (seconds)
SEARCH_GOAL = 3.0
QUERY = "how do I fix a smelly compost heap"


def ragmeter_command() -> list[str]:
    """The ``ragmeter`` script beside this Python (what users run), else ``python -m``."""
    script = Path(sys.executable).with_name("ragmeter")
    found = str(script) if script.is_file() else shutil.which("ragmeter")
    return [found] if found else [sys.executable, "-m", "ragmeter"]


def commands() -> dict[str, list[str]]:
    python, cli = sys.executable, ragmeter_command()
    return {
        'python -c "pass"': [python, "-c", "pass"],
        'python -c "import fastapi"': [python, "-c", "import fastapi"],
        'python -c "import ragmeter"': [python, "-c", "import ragmeter"],
        "ragmeter --help": [*cli, "--help"],
        "ragmeter metrics": [*cli, "metrics"],
        "ragmeter space search (demo space)": [*cli, "space", "search", "ragmeter-demo", QUERY],
    }


def run(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds from start to exit; SystemExit if the command failed."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return seconds


def measure(rounds: int, env: dict[str, str]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {label: [] for label in commands()}
    for round_ in range(rounds):  # taking turns, so outside load hits every command alike
        for label, argv in commands().items():
            times[label].append(run(argv, env))
        print(f"round {round_ + 1}: " + ", ".join(f"{t[-1]:.2f}s" for t in times.values()))
    return times


def verdicts(best: dict[str, float]) -> list[str]:
    bare = best['python -c "pass"']
    lines = []
    for label in ('python -c "import ragmeter"', "ragmeter --help"):
        over = best[label] - bare
        met = "met" if over <= OVER_PYTHON_GOAL else "NOT met"
        lines.append(
            f"- `{label}` within {OVER_PYTHON_GOAL} s of bare Python: {over:+.2f} s ({met})"
        )
    search = best["ragmeter space search (demo space)"]
    met = "met" if search < SEARCH_GOAL else "NOT met"
    lines.append(f"- `ragmeter space search` under {SEARCH_GOAL:.0f} s: {search:.2f} s ({met})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "RAGMETER_HOME": home, "HF_HUB_OFFLINE": "1", "COLUMNS": "100"}
        print("building the demo space ...")
        run([*ragmeter_command(), "demo"], env)
        times = measure(args.rounds, env)
    best = {label: min(values) for label, values in times.items()}
    rows = [
        "| command | best s | median s |",
        "|---|---:|---:|",
        *(
            f"| `{label}` | {best[label]:.2f} | {statistics.median(values):.2f} |"
            for label, values in times.items()
        ),
    ]
    body = "\n".join(
        [
            f"Each command a fresh process, start to exit, {args.rounds} rounds taking turns in "
            "one loop; `space search` embeds its query with the local model on the demo space "
            "(`ragmeter demo`, built once before the loop).",
            "",
            *rows,
            "",
            "**Goals:**",
            "",
            *verdicts(best),
            "",
            machine_line("numpy", "tokenizers", "typer", "fastapi"),
        ]
    )
    print(body)
    write_section("startup", "Start-up: import, --help, metrics, space search", body)


if __name__ == "__main__":
    main()
