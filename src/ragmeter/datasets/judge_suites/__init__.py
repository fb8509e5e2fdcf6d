"""Human-labelled judge suites: the public suites (RAGTruth, EvalsBench, UHGEval, TREC RAG)
read from a folder holding them, or a team's own labelled JSON Lines file. No suite data is
shipped with ragmeter: the folder is ``--suites-dir``, else ``$RAGMETER_JUDGE_SUITES``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ragmeter.datasets.judge_suites.base import LabelKind, Suite, SuiteItem
from ragmeter.datasets.judge_suites.evalsbench import read_evalsbench
from ragmeter.datasets.judge_suites.labelled import read_labelled
from ragmeter.datasets.judge_suites.ragtruth import read_ragtruth
from ragmeter.datasets.judge_suites.trec_rag import read_trec_rag
from ragmeter.datasets.judge_suites.uhgeval import read_uhgeval
from ragmeter.errors import ConfigError

__all__ = [
    "SUITES",
    "SUITES_ENV",
    "LabelKind",
    "Suite",
    "SuiteItem",
    "load_suite",
    "read_labelled",
    "suites_folder",
]

#: the environment variable naming the folder of the public suites
SUITES_ENV = "RAGMETER_JUDGE_SUITES"

#: suite name -> (its sub-folder, its reader)
SUITES: dict[str, tuple[str, Callable[[Path], Suite]]] = {
    "ragtruth": ("ragtruth", read_ragtruth),
    "ragtruth-lenient": ("ragtruth", lambda folder: read_ragtruth(folder, lenient=True)),
    "evalsbench": ("evalsbench", read_evalsbench),
    "uhgeval": ("uhgeval", read_uhgeval),
    "trec_rag": ("trec_rag", read_trec_rag),
}


def suites_folder(given: Path | None) -> Path:
    """``given``, else ``$RAGMETER_JUDGE_SUITES``; ConfigError when neither is set or the
    folder does not exist."""
    text = str(given) if given is not None else os.environ.get(SUITES_ENV)
    if not text:
        raise ConfigError(
            f"where are the judge suites? give --suites-dir or set {SUITES_ENV} to the folder "
            f"holding {', '.join(sorted({sub for sub, _ in SUITES.values()}))}"
        )
    folder = Path(text).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"judge suites folder not found: {folder}")
    return folder


def load_suite(spec: str, *, metric: str | None = None, folder: Path | None = None) -> Suite:
    """The suite ``spec``: a name of ``SUITES`` (read from ``suites_folder(folder)``) or a
    labelled JSON Lines file (for ``metric``, default faithfulness)."""
    if spec in SUITES:
        sub, read = SUITES[spec]
        return read(suites_folder(folder) / sub)
    path = Path(spec).expanduser()
    if path.suffix.lower() in (".jsonl", ".ndjson") or path.exists():
        return read_labelled(path, metric or "faithfulness")
    raise ConfigError(
        f"unknown judge suite '{spec}': one of {', '.join(SUITES)}, or a labelled .jsonl file"
    )
