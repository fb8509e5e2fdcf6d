"""Review queues of a stored run: made from one metric's results by a sampling rule, read back
with each reviewer's progress (rows they labelled on the queue's metric, of the rows given)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.errors import ConfigError, clip
from ragmeter.metrics.scales import metric_scale
from ragmeter.runs.review.sampling import Candidate, ReviewOptions, draw
from ragmeter.runs.storage.labels import LabelStore
from ragmeter.runs.storage.result_store import verdicts
from ragmeter.runs.storage.review_queues import NewItem, Queue, ReviewQueueStore
from ragmeter.runs.storage.store import RunStore, metric_names
from ragmeter.wire.review import ReviewerProgress, ReviewItem, ReviewQueueInfo, ReviewQueueItems

__all__ = ["candidates", "make_queue", "queue_info", "reviewer_items"]


def _repeats(details: Any) -> tuple[float | None, ...]:
    """A result's repeated scores (``details.values.repeat_N``, in repeat order)."""
    values = (details or {}).get("values") if isinstance(details, dict) else None
    if not isinstance(values, dict):
        return ()
    found = []
    for key, value in values.items():
        if key.startswith("repeat_") and key[7:].isdigit():
            score = float(value) if isinstance(value, int | float) else None
            found.append((int(key[7:]), score))
    return tuple(score for _, score in sorted(found))


def candidates(
    runs: RunStore, run_id: str, metric: str, *, repeats: bool = True
) -> list[Candidate]:
    """Every stored row of a run with its score and verdict on ``metric``, and its repeats
    (read from the results' details only when ``repeats``: they can be large)."""
    with runs.store.session() as session:
        found = verdicts(session, run_id, metric, details=repeats)
    return [
        Candidate(found_row[0], found_row[1], found_row[2],
                  _repeats(found_row[3]) if repeats else ())
        for found_row in found
    ]  # fmt: skip


def make_queue(
    runs: RunStore,
    queues: ReviewQueueStore,
    run_id: str,
    metric: str,
    options: ReviewOptions,
    created_by: str | None,
) -> Queue:
    """Draw rows of ``metric`` of a stored run by ``options`` and keep them as a queue."""
    record = runs.get(run_id)
    if metric not in metric_names(record):
        known = ", ".join(metric_names(record))
        raise ConfigError(f"metric: run '{clip(run_id)}' has no metric '{clip(metric)}' ({known})")
    options.check()
    found = candidates(runs, run_id, metric, repeats=options.rule == "disagreement")
    if not found:
        raise ConfigError(f"run '{clip(run_id)}' has no stored result of {metric} yet")
    sample = draw(found, options)
    picks = {p.row_index: p for p in sample.picks}
    items = [
        NewItem(a.row_index, a.reviewer, a.order, picks[a.row_index].probability,
                picks[a.row_index].stratum)
        for a in sample.assignments
    ]  # fmt: skip
    kept = {
        "count": options.count,
        "reviewers": list(options.reviewers),
        "k": options.k,
        "seed": options.seed,
        "threshold": sample.threshold,
        "strata": options.strata,
        "notes": sample.notes,
    }
    return queues.add(run_id, metric, options.rule, kept, sample.eligible, items, created_by)


def _scale(metric: str) -> list[float | None] | None:
    scale = metric_scale(metric)
    return None if scale is None else [scale[0], scale[1]]


def _labelled(labels: LabelStore, queue: Queue) -> dict[tuple[int, str], float]:
    """The labels of the queue's metric on its run's rows: (row, reviewer) -> value."""
    found = labels.of_run(queue.run_id, metric=queue.metric)
    return {(lb.position, lb.reviewer): lb.value for lb in found}


def _info(
    queue: Queue, items: Sequence[Any], done: dict[tuple[int, str], float]
) -> ReviewQueueInfo:
    progress: dict[str, list[int]] = {name: [0, 0] for name in queue.options.get("reviewers", [])}
    for item in items:
        counts = progress.setdefault(item.reviewer, [0, 0])
        counts[1] += 1
        counts[0] += (item.row_index, item.reviewer) in done
    return ReviewQueueInfo(
        id=queue.id,
        run_id=queue.run_id,
        metric=queue.metric,
        rule=queue.rule,
        options=queue.options,
        eligible=queue.eligible,
        rows=len({item.row_index for item in items}),
        scale=_scale(queue.metric),
        created_by=queue.created_by,
        created_at=queue.created_at,
        progress=[
            ReviewerProgress(reviewer=n, labelled=c[0], assigned=c[1]) for n, c in progress.items()
        ],
    )


def queue_info(queues: ReviewQueueStore, labels: LabelStore, queue: Queue) -> ReviewQueueInfo:
    """A queue with each reviewer's progress."""
    return _info(queue, queues.items(queue.id), _labelled(labels, queue))


def reviewer_items(
    queues: ReviewQueueStore, labels: LabelStore, queue: Queue, reviewer: str
) -> ReviewQueueItems:
    """``reviewer``'s rows of a queue in order, each with their label (``done``)."""
    every = queues.items(queue.id)
    done = _labelled(labels, queue)
    mine = sorted((i for i in every if i.reviewer == reviewer), key=lambda i: i.position)
    items = [
        ReviewItem(
            row_index=i.row_index,
            position=i.position,
            probability=i.probability,
            stratum=i.stratum,
            done=(i.row_index, reviewer) in done,
            value=done.get((i.row_index, reviewer)),
        )
        for i in mine
    ]
    return ReviewQueueItems(queue=_info(queue, every, done), reviewer=reviewer, items=items)
