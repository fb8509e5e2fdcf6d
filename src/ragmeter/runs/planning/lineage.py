"""What made a run, kept with it: the dataset version, the target (retriever, top_k, the
space's embedder, chunking and revision, or the app and a hash of its settings), the metrics
and options, the judge model and the prompt it was given, the embedder, ragmeter's version
and the code's git commit. Nothing here names a folder of the machine that made the run (a
dataset is its file name and content hash), so a lineage can be shown to anyone.

``label`` says a run's target in a few words (``hybrid@5 on docs``); ``changes`` lists what
differs between two runs' lineages, for Compare's "what changed" table."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter._version import ragmeter_version
from ragmeter.errors import ConfigError
from ragmeter.runs.planning.config import AppTargetConfig, EvaluationConfig, SpaceTargetConfig
from ragmeter.store.names import normal_text, single_script

if TYPE_CHECKING:
    from ragmeter.runs.planning.plan import RunPlan
    from ragmeter.store.models import DatasetRecord

__all__ = [
    "Change",
    "RunLabels",
    "changes",
    "check_tags",
    "code_version",
    "dataset_name_of",
    "flat_lineage",
    "judge_lineage",
    "label",
    "make_lineage",
    "ragmeter_version",
]

#: seconds ``git`` may take to say the commit (a huge working tree must not stall a run)
_GIT_SECONDS = 5.0
#: hex digits of a hash shown for a dataset, a prompt or an app's settings
SHORT_HASH = 12


#: what a run's name, tags and note may hold (each a 4xx/exit 2 naming the limit past it)
MAX_NAME = 200
MAX_TAGS = 20
MAX_TAG = 100
MAX_NOTE = 4000
_TAG = re.compile(r"[\w.:/+-]+")


@dataclass(frozen=True)
class RunLabels:
    """What a user says about a run: its ``name`` (not unique), ``tags`` and a ``note``."""

    name: str | None = None
    tags: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        name = None if self.name is None else normal_text(self.name, "name").strip()
        if name is not None and not 0 < len(name) <= MAX_NAME:
            raise ConfigError(f"a run's name is 1 to {MAX_NAME} characters, got {len(name)}")
        if name is not None:
            single_script(name, "name")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "tags", check_tags(self.tags))
        if len(self.note) > MAX_NOTE:
            raise ConfigError(
                f"a run's note is at most {MAX_NOTE} characters, got {len(self.note)}"
            )


def check_tags(tags: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``tags`` without repeats, in order; ConfigError naming the first one not allowed."""
    out = tuple(dict.fromkeys(normal_text(t, "tags").strip() for t in tags))
    if len(out) > MAX_TAGS:
        raise ConfigError(f"a run has at most {MAX_TAGS} tags, got {len(out)}")
    for tag in out:
        if not 0 < len(tag) <= MAX_TAG or not _TAG.fullmatch(tag):
            raise ConfigError(
                f"invalid tag {tag[:MAX_TAG]!r}: 1 to {MAX_TAG} letters, digits or . _ - : / +"
            )
        single_script(tag, "tags")
    return out


def dataset_name_of(source: str) -> str | None:
    """The name a dataset read from file ``source`` is kept under: the file's name without
    its extension(s) (``qa.jsonl.gz``: ``qa``), made a valid dataset name; None for rows not
    read from a file."""
    if not source or source.startswith("<") or source in ("python", "request", "datasets"):
        return None
    stem = Path(source).name.split(".", 1)[0]
    cleaned = re.sub(r"[^\w.\- ]+", "-", stem).strip(" -.")[:MAX_NAME]
    if not cleaned or cleaned.isdigit():
        cleaned = f"dataset-{cleaned}" if cleaned else "dataset"
    return cleaned


def code_version(folder: Path | None = None) -> dict[str, Any] | None:
    """The git commit of the working tree around ``folder`` (default: the current one) and
    whether it has uncommitted changes to tracked files; None outside a git working tree or
    without git."""
    git = shutil.which("git")
    if git is None:
        return None
    where = str(folder or Path.cwd())

    def ask(*args: str) -> str | None:
        try:
            done = subprocess.run(
                [git, "-C", where, *args],
                capture_output=True,
                text=True,
                timeout=_GIT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = ask("rev-parse", "HEAD")
    if not commit:
        return None
    status = ask("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": None if status is None else bool(status.strip())}


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:SHORT_HASH]


def label(config: EvaluationConfig) -> str:
    """A run's target in a few words: ``hybrid@5 on docs``, ``app qa-bot``, or ``given
    answers`` for rows that carry their own."""
    target = config.target
    if isinstance(target, SpaceTargetConfig):
        return f"{target.retriever}@{target.top_k} on {target.space}"
    if isinstance(target, AppTargetConfig):
        on = f" on {target.space}" if target.space else ""
        return f"app {target.app}{on}"
    return "given answers"


def _dataset(record: DatasetRecord) -> dict[str, Any]:
    return {
        "name": record.name,
        "version": record.version,
        "hash": (record.content_hash or "")[:SHORT_HASH],
        "rows": record.row_count,
        "source": record.source,
    }


def _target(plan: RunPlan) -> dict[str, Any]:
    from ragmeter.runs.planning.targets import AppTarget, RecallTarget

    config = plan.config
    target: dict[str, Any] = {"kind": config.target.kind}
    if isinstance(config.target, SpaceTargetConfig):
        target.update(
            retriever=config.target.retriever,
            top_k=config.target.top_k,
            score_threshold=config.target.score_threshold,
        )
    searcher = getattr(plan.target, "searcher", None)
    if isinstance(plan.target, RecallTarget | AppTarget) and searcher is not None:
        info = searcher.info
        target["space"] = {
            "name": info.name,
            "embedder": info.embedder,
            "chunking": info.chunking.model_dump(mode="json"),
            "revision": info.revision,
            "documents": info.documents,
        }
    if isinstance(plan.target, AppTarget):
        app = plan.target.app
        settings = getattr(app, "config", None)
        dump = getattr(settings, "model_dump", None)
        dumped = dump(mode="json") if dump is not None else None
        target["app"] = {
            "name": app.name,
            "kind": getattr(settings, "kind", type(app).__name__),
            "settings": None if dumped is None else _short(dumped),
        }
    elif isinstance(config.target, AppTargetConfig):
        target["app"] = {"name": config.target.app}
    if isinstance(config.target, AppTargetConfig) and "@" in config.target.app:
        target["app"]["version"] = _version(config.target.app)  # a stored app, pinned
    return target


def _version(pinned: str) -> int:
    """V of a pinned ``NAME@V``."""
    return int(pinned.rpartition("@")[2])


def judge_lineage(plan: RunPlan) -> dict[str, Any] | None:
    """The judge a plan asks (model, endpoint) and its prompt (code, version, hash)."""
    config = plan.config
    if config.judge is None:
        return None
    templates = {m.metric_name: getattr(m, "prompt_template", None) for m in plan.metrics}
    templates = {k: v for k, v in templates.items() if isinstance(v, str)}
    prompt: dict[str, Any] = {"code": config.judge_prompt or "built-in"}
    if config.judge_prompt is not None and "@" in config.judge_prompt:
        code = config.judge_prompt.rpartition("@")[0]
        prompt.update(code=code, version=_version(config.judge_prompt))
    if templates:
        prompt["hash"] = _short(templates)
    return {"model": config.judge.model, "base_url": config.judge.base_url, "prompt": prompt}


#: ``make_lineage``'s default: ask git about the current folder
_HERE: Any = object()


def make_lineage(
    plan: RunPlan, dataset: DatasetRecord, *, code: dict[str, Any] | None = _HERE
) -> dict[str, Any]:
    """Everything that made a run of ``plan`` over the stored ``dataset``; ``code`` is the
    git commit of the code that asked for it (default: of the current folder's working
    tree; a service passes what its client said, or None)."""
    config = plan.config
    embedder = getattr(plan.embedder, "name", None) or config.embedder.model
    return {
        "label": label(config),
        "dataset": _dataset(dataset),
        "target": _target(plan),
        "metrics": [m.metric_name for m in plan.metrics],
        "options": {
            "top_k": config.top_k,
            "relevance_level": config.relevance_level,
            "no_relevant": config.no_relevant,
            "plan": config.plan,
            "language": config.language,
        },
        "judge": judge_lineage(plan),
        "embedder": embedder,
        "ragmeter": ragmeter_version(),
        "code": code_version() if code is _HERE else code,
    }


@dataclass(frozen=True)
class Change:
    """One thing that differs between two runs' lineages: ``key`` is its dotted path
    (``target.top_k``), ``a`` and ``b`` the two values (None where a run lacks it)."""

    key: str
    a: Any
    b: Any


def flat_lineage(value: Any, prefix: str = "") -> dict[str, Any]:
    """A lineage as dotted keys (``target.space.revision``) and plain values (a list as one
    comma-separated text), in its own order."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flat_lineage(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list):
        return {prefix: ", ".join(map(str, value))}
    return {prefix: value}


#: lineage keys a comparison does not list: what they say, a hash or a revision says already
_NOT_A_CHANGE = frozenset({"dataset.rows", "target.space.documents"})


def changes(a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    """What differs between lineages ``a`` and ``b``, in ``a``'s key order then ``b``'s."""
    flat_a, flat_b = flat_lineage(a), flat_lineage(b)
    keys = [*flat_a, *(k for k in flat_b if k not in flat_a)]
    return [
        Change(key, flat_a.get(key), flat_b.get(key))
        for key in keys
        if key not in _NOT_A_CHANGE and flat_a.get(key) != flat_b.get(key)
    ]
