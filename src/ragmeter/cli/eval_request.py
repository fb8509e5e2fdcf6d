"""What ``ragmeter eval`` was asked to do (its options), and reading its dataset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragmeter.datasets import Dataset, load_dataset
from ragmeter.errors import DatasetError

__all__ = ["JUDGE_HINT", "EvalRequest", "load_rows"]


@dataclass(frozen=True)
class EvalRequest:
    """Everything ``ragmeter eval`` was asked to do."""

    data: Path
    #: comma-separated metric specs ("" when a DB-GPT request body names them)
    metrics: str = ""
    top_k: int | None = None
    out: Path | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_api_key_env: str | None = None
    judge_timeout: float | None = None
    judge_prompt: str | None = None
    #: fused or separate (None: fused, or the request body's context.plan)
    plan: str | None = None
    #: auto, en or zh (None: auto, or the request body's context.language)
    language: str | None = None
    #: the grade from which a judged item is relevant (None: 1, or the body's context)
    relevance_level: int | None = None
    #: null or zero: what a row without a relevant item scores (None: null, or the body's)
    no_relevant: str | None = None
    no_cache: bool = False
    embedding_model: str | None = None
    embedding_base_url: str | None = None
    embedding_api_key_env: str | None = None
    max_concurrency: int = 16
    space: str | None = None
    retriever: str | None = None
    score_threshold: float | None = None
    app: str | None = None
    #: how the dataset is named in tables (default: its path)
    title: str | None = None
    #: run on this ragmeter server instead of here
    server: str | None = None
    #: keep nothing in the store (a throwaway run, not resumable)
    no_store: bool = False
    #: score the rows this many times, each repeat's judge requests with their own seed,
    #: and report the mean (``runs.execution.repeats``)
    repeats: int = 1
    #: what to call the stored run (None: the dataset's name), its tags and note
    name: str | None = None
    tags: tuple[str, ...] = ()
    note: str = ""
    #: the stored dataset the rows are kept as (None: the file's name)
    dataset_name: str | None = None
    #: where the rows are scored: local or ray (None: ``[executor] kind``), and the Ray
    #: cluster's address (None: ``[executor] address``)
    executor: str | None = None
    ray_address: str | None = None


#: how the command line names a judge, added to "metrics X need a judge model"
JUDGE_HINT = (
    " (give --judge-model NAME: a [models.NAME] of ragmeter.toml, or a model id with "
    "--judge-base-url)"
)


def load_rows(request: EvalRequest, *, key_ahead: bool = False) -> Dataset:
    """The dataset, which must hold rows: an empty file is an error, not a table of 0 rows.
    ``key_ahead``: the rows will be stored here (their file's key is computed meanwhile)."""
    dataset = load_dataset(request.data, key_ahead=key_ahead)
    if len(dataset) == 0:
        raise DatasetError("holds no rows; nothing to evaluate", source=str(request.data))
    return dataset
