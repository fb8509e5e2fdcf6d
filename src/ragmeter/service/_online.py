"""The service's online rules: ragmeter.toml's (read-only through the API) and the stored
ones, their caps, and the background scorer the server runs over its trace source."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ragmeter.config import OnlineRule, Settings
from ragmeter.errors import ConfigError, ConflictError, LimitError, NotFoundError
from ragmeter.runs.online import (
    BudgetLedger,
    RuleStore,
    StoredTraces,
    TraceSource,
    check_rule,
    utc_day,
)
from ragmeter.runs.storage.traces import TraceStore
from ragmeter.store.db import Store
from ragmeter.wire.online import OnlineRuleInfo

__all__ = ["OnlineRules"]

_FROM_FILE = "is defined in ragmeter.toml ([[online.rules]]); change it there"


@dataclass
class OnlineRules:
    """Rules of one server: ``rules(settings)`` for the scorer, the API's changes checked
    against the caps (``[online] max_rules``, ``max_rule_filters``, ``[server] max_metrics``)."""

    store: RuleStore
    ledger: BudgetLedger
    #: where complete traces are read and scores written (the trace store); None: no scoring
    source: TraceSource | None = field(default=None)

    @classmethod
    def open(cls, store: Store, traces: TraceStore | None = None) -> OnlineRules:
        """The rules of ``store``, scoring the traces of ``traces`` (None: none)."""
        source = None if traces is None else StoredTraces(traces)
        return cls(RuleStore(store), BudgetLedger(store), source)

    def rules(self, settings: Settings) -> list[OnlineRule]:
        """ragmeter.toml's rules, then the stored ones (a stored rule never shadows one of the
        file: the API refuses its name)."""
        taken = {r.name for r in settings.online.rules}
        stored = [rule for rule, _by in self.store.list() if rule.name not in taken]
        return [*settings.online.rules, *stored]

    def info(self, settings: Settings) -> list[OnlineRuleInfo]:
        day = utc_day()
        listed: list[tuple[OnlineRule, Any, str | None]] = [
            (rule, "ragmeter.toml", None) for rule in settings.online.rules
        ]
        taken = {r.name for r in settings.online.rules}
        listed += [(r, "api", by) for r, by in self.store.list() if r.name not in taken]
        spent = self.ledger.spent_today([r.name for r, *_ in listed], day)
        scored = self.store.scored()
        return [
            OnlineRuleInfo(
                rule=rule, source=source, created_by=by, day=day,
                requests_today=spent[rule.name].requests, tokens_today=spent[rule.name].tokens,
                traces_today=spent[rule.name].traces, traces_scored=scored.get(rule.name, 0),
            )
            for rule, source, by in listed
        ]  # fmt: skip

    def one(self, settings: Settings, name: str) -> OnlineRuleInfo:
        for found in self.info(settings):
            if found.rule.name == name:
                return found
        raise NotFoundError(f"online rule '{name}' not found")

    def check(self, settings: Settings, rule: OnlineRule) -> None:
        """The caps and the rule's names (metrics, judge, filter fields), before it is kept."""
        server, online = settings.server, settings.online
        if len(rule.metrics) > server.max_metrics:
            raise LimitError(
                f"online rule '{rule.name}' names {len(rule.metrics)} metrics; a rule takes at "
                f"most {server.max_metrics}",
                setting="[server] max_metrics",
            )
        if len(rule.filters) > online.max_rule_filters:
            raise LimitError(
                f"online rule '{rule.name}' has {len(rule.filters)} filters; a rule takes at "
                f"most {online.max_rule_filters}",
                setting="[online] max_rule_filters",
            )
        check_rule(rule, settings)

    def create(self, settings: Settings, rule: OnlineRule) -> None:
        if any(r.name == rule.name for r in settings.online.rules):
            raise ConflictError(f"online rule '{rule.name}' {_FROM_FILE}")
        self.check(settings, rule)
        count = len(self.rules(settings))
        if count >= settings.online.max_rules:
            raise LimitError(
                f"this server keeps {count} online rules, its most",
                setting="[online] max_rules",
            )
        self.store.create(rule)

    def replace(self, settings: Settings, rule: OnlineRule) -> None:
        self._stored(settings, rule.name)
        self.check(settings, rule)
        self.store.replace(rule)

    def patch(self, settings: Settings, name: str, changes: dict[str, Any]) -> OnlineRule:
        rule = self._stored(settings, name)
        try:
            changed = OnlineRule.model_validate({**rule.model_dump(), **changes})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "rule"
            raise ConfigError(f"online rule '{name}': {where}: {first['msg']}") from None
        self.replace(settings, changed)
        return changed

    def delete(self, settings: Settings, name: str) -> None:
        self._stored(settings, name)
        self.store.delete(name)

    def creators(self, name: str) -> list[str | None]:
        """Who made the stored rule ``name`` (empty: none stored), for ``require_owner``."""
        try:
            return [self.store.get(name)[1]]
        except NotFoundError:
            return []

    def _stored(self, settings: Settings, name: str) -> OnlineRule:
        if any(r.name == name for r in settings.online.rules):
            raise ConflictError(f"online rule '{name}' {_FROM_FILE}")
        return self.store.get(name)[0]
