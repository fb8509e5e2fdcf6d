"""Monitors of production traces' metrics (buckets over time, drift verdicts) and alert
rules with their episodes (``/online/...``); the server evaluates the rules in the
background (``watch_alerts``)."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Annotated, Literal

import httpx
from fastapi import APIRouter, Depends, Query, status

from ragmeter.errors import ConfigError
from ragmeter.runs.monitor.alerts import parse_alert
from ragmeter.runs.monitor.evaluate import evaluate_alerts
from ragmeter.runs.monitor.store import AlertStore, StoredRule
from ragmeter.runs.monitor.view import MonitorAsk, monitor
from ragmeter.runs.monitor.webhook import WebhookSender, webhook_policy
from ragmeter.service.envelope import Result, ok
from ragmeter.service.state import Services, services
from ragmeter.wire.monitor import (
    AlertEventOut,
    AlertRuleIn,
    AlertRuleOut,
    AlertRulePatch,
    MonitorOut,
)

__all__ = ["router", "watch_alerts"]

log = logging.getLogger(__name__)
router = APIRouter(tags=["online"])
Deps = Annotated[Services, Depends(services)]
Name = Annotated[str, Query(min_length=1, max_length=200)]


def _ns(value: datetime | None) -> int | None:
    """A time of the query as Unix epoch ns; one without an offset is UTC (as the buckets
    are), never the server host's local time."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1e9)


@router.get("/online/monitor")
def get_monitor(
    svc: Deps,
    metric: Annotated[list[str], Query(min_length=1, max_length=20)],
    bucket: Literal["hour", "day"] = "hour",
    since: datetime | None = None,
    until: datetime | None = None,
    window: Annotated[str | None, Query(max_length=10)] = None,
    baseline: Annotated[str, Query(max_length=200)] = "window",
    #: at least 0.01: a smaller one asks the bootstrap for millions of draws
    alpha: Annotated[float, Query(ge=0.01, le=0.5)] = 0.05,
) -> Result[MonitorOut]:
    """Each ``metric`` of scored traces over ``since``..``until`` (ISO times, UTC without
    an offset; default: the last day in hours, the last 30 days in days) in UTC buckets
    with mean, 95% CI and n; and the drift
    of the last ``window`` (default: one bucket) against ``baseline``: ``window`` (the
    scores before it) or ``run:RUN_ID`` (that stored run's scores of the metric), by a
    permutation test corrected across the metrics as compare corrects them, with compare's
    verdicts (better, worse, no_evidence)."""
    ask = MonitorAsk(
        metrics=tuple(metric),
        bucket=bucket,
        since_ns=_ns(since),
        until_ns=_ns(until),
        window=window,
        baseline=baseline,
        alpha=alpha,
    )
    return ok(monitor(ask, svc.score_reader, svc.kb.store, time.time_ns()))


def _sender(svc: Services) -> WebhookSender:
    return WebhookSender(webhook_policy(svc.settings.online.allow_webhook_hosts))


def _out(alerts: AlertStore, rule: StoredRule) -> AlertRuleOut:
    try:
        canonical = parse_alert(rule.expression).text
    except ConfigError:
        canonical = "(no longer understood)"
    webhook = None
    if rule.webhook_url is not None:
        try:
            url = httpx.URL(rule.webhook_url)
            webhook = f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}/…"
        except (httpx.InvalidURL, ValueError):
            webhook = "(not a valid URL)"
    return AlertRuleOut(
        name=rule.name,
        expression=rule.expression,
        rule=canonical,
        webhook=webhook,
        enabled=rule.enabled,
        firing=alerts.open_episode(rule.id) is not None,
        created_by=rule.created_by,
        created_at=rule.created_at,
    )


@router.post("/online/alerts", status_code=status.HTTP_201_CREATED)
def add_alert(body: AlertRuleIn, svc: Deps) -> Result[AlertRuleOut]:
    """A new alert rule (``faithfulness.mean < 0.8 over 1h with n >= 50``); its episodes
    post to ``webhook_url``, which must be a host webhooks may reach (public, or listed in
    ``[online] allow_webhook_hosts``)."""
    try:
        parse_alert(body.expression)
    except ConfigError as exc:
        raise ConfigError(f"expression: {exc}") from None
    if body.webhook_url is not None:
        refused = _sender(svc).refuses(body.webhook_url)
        if refused is not None:
            raise ConfigError(f"webhook_url: {refused}")
    alerts = AlertStore(svc.kb.store)
    rule = alerts.add(body.name, body.expression.strip(), body.webhook_url)
    if not body.enabled:
        rule = alerts.set_enabled(rule.name, False)
    return ok(_out(alerts, rule))


@router.get("/online/alerts")
def list_alerts(svc: Deps) -> Result[list[AlertRuleOut]]:
    """The alert rules, by name, each saying whether it is firing."""
    alerts = AlertStore(svc.kb.store)
    return ok([_out(alerts, rule) for rule in alerts.rules()])


@router.get("/online/alerts/{name}")
def get_alert(name: str, svc: Deps) -> Result[AlertRuleOut]:
    alerts = AlertStore(svc.kb.store)
    return ok(_out(alerts, alerts.get(name)))


@router.patch("/online/alerts/{name}")
def patch_alert(name: str, body: AlertRulePatch, svc: Deps) -> Result[AlertRuleOut]:
    """Turn a rule's evaluation on or off (an open episode stays as it is)."""
    alerts = AlertStore(svc.kb.store)
    return ok(_out(alerts, alerts.set_enabled(name, body.enabled)))


@router.delete("/online/alerts/{name}")
def delete_alert(name: str, svc: Deps) -> Result[AlertRuleOut]:
    """Delete a rule and its episodes."""
    alerts = AlertStore(svc.kb.store)
    found = _out(alerts, alerts.get(name))
    alerts.delete(name)
    return ok(found)


@router.get("/online/alert-events")
def alert_events(
    svc: Deps,
    rule: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Result[list[AlertEventOut]]:
    """Alert episodes, newest first (of one ``rule`` if given): when each fired and
    resolved, the value and n then, and what each webhook delivery gave."""
    found = AlertStore(svc.kb.store).events(rule=rule, limit=limit)
    return ok([AlertEventOut.model_validate(e, from_attributes=True) for e in found])


async def watch_alerts(found: Services) -> None:
    """Every ``[online] alert_every_seconds``: evaluate the enabled alert rules on the
    production scores (nothing while this server keeps none)."""
    while True:
        await asyncio.sleep(found.settings.online.alert_every_seconds)
        reader = found.score_reader
        if reader is None:
            continue
        try:
            await evaluate_alerts(AlertStore(found.kb.store), reader, _sender(found))
        except Exception:  # the store is away for a moment: look again later, never stop
            log.exception("cannot evaluate the alert rules")
