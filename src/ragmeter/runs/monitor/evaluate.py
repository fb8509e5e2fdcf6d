"""One evaluation of every enabled alert rule: each rule's statistic over its window, the
episode step it leads to (fire, resolve or nothing), claimed in the store so that of several
replicas evaluating at once one acts, and the webhook the acting one posts."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.runs.monitor.alerts import (
    AlertRule,
    Reading,
    ScoreReader,
    Step,
    parse_alert,
    read_window,
    step,
)
from ragmeter.runs.monitor.store import AlertStore, StoredRule
from ragmeter.runs.monitor.webhook import WebhookSender

__all__ = ["Outcome", "evaluate_alerts", "payload"]

log = logging.getLogger(__name__)

#: alert rules evaluated (and their webhooks posted) at once, at most
RULES_AT_ONCE = 16


@dataclass(frozen=True)
class Outcome:
    """What one replica did for a rule: the step it claimed, the episode's id, the reading
    and what the webhook delivery gave."""

    rule: str
    step: Step
    event_id: int
    reading: Reading
    delivery: str


def payload(
    stored: StoredRule, rule: AlertRule, todo: Step, event_id: int, reading: Reading
) -> dict[str, Any]:
    """The JSON a webhook receives."""
    return {
        "status": "firing" if todo == "fire" else "resolved",
        "rule": stored.name,
        "expression": rule.text,
        "metric": rule.metric,
        "statistic": rule.condition.stat,
        "value": reading.value,
        "n": reading.n,
        "threshold": rule.condition.bound,
        "window": rule.window,
        "episode": event_id,
        "at": datetime.now(UTC).isoformat(),
    }


async def _claim(
    alerts: AlertStore, stored: StoredRule, todo: Step, reading: Reading, open_id: int | None
) -> int | None:
    if todo == "fire":
        assert reading.value is not None  # a condition that holds has a value
        return await asyncio.to_thread(alerts.claim_fire, stored.id, reading.value, reading.n)
    assert open_id is not None  # resolving needs an open episode
    won = await asyncio.to_thread(alerts.claim_resolve, open_id, reading.value, reading.n)
    return open_id if won else None


async def _evaluate_one(
    alerts: AlertStore,
    reader: ScoreReader,
    sender: WebhookSender,
    stored: StoredRule,
    now_ns: int,
) -> Outcome | None:
    rule = parse_alert(stored.expression)
    since = now_ns - rule.window_seconds * 10**9
    _times, values = await asyncio.to_thread(reader, rule.metric, since, now_ns)
    reading = read_window(rule, values)
    open_id = await asyncio.to_thread(alerts.open_episode, stored.id)
    todo = step(open_id is not None, reading.holds)
    if todo is None:
        return None
    event_id = await _claim(alerts, stored, todo, reading, open_id)
    if event_id is None:  # another replica acted first: it sends the webhook
        return None
    if stored.webhook_url is None:
        delivery = "no webhook"
    else:
        body = payload(stored, rule, todo, event_id, reading)
        delivery = await sender.send(stored.webhook_url, body)
    resolved = todo == "resolve"
    await asyncio.to_thread(alerts.delivered, event_id, delivery, resolved=resolved)
    log.warning("alert '%s' %s (%s): %s", stored.name, todo, reading.value, delivery)
    return Outcome(stored.name, todo, event_id, reading, delivery)


async def evaluate_alerts(
    alerts: AlertStore, reader: ScoreReader, sender: WebhookSender, *, now_ns: int | None = None
) -> list[Outcome]:
    """Evaluate every enabled rule at ``now_ns`` (default: now): what this replica did. The
    rules are evaluated at once (``RULES_AT_ONCE`` at most), each posting its own webhook, so
    a slow receiver (bounded by the sender's timeout and tries) delays only its own rule's
    post. A rule whose text no
    longer parses, or that fails to evaluate, is logged and skipped."""
    now = time.time_ns() if now_ns is None else now_ns
    rules = await asyncio.to_thread(alerts.rules, enabled_only=True)
    room = asyncio.Semaphore(RULES_AT_ONCE)

    async def one(stored: StoredRule) -> Outcome | None:
        async with room:
            return await _guarded(alerts, reader, sender, stored, now)

    done = await asyncio.gather(*(one(stored) for stored in rules))
    return [outcome for outcome in done if outcome is not None]


async def _guarded(
    alerts: AlertStore, reader: ScoreReader, sender: WebhookSender, stored: StoredRule, now: int
) -> Outcome | None:
    """``_evaluate_one``, a failure logged: one rule's (the store, the reader) must not stop
    the rest."""
    try:
        return await _evaluate_one(alerts, reader, sender, stored, now)
    except ConfigError as exc:
        log.error("alert rule '%s' is skipped: %s", stored.name, exc)
    except Exception:
        log.exception("alert rule '%s' could not be evaluated", stored.name)
    return None
