"""A rule's daily judge budget: requests and tokens per UTC day, kept in the store so every
server replica sharing it counts against one ledger. A request is reserved before it is sent,
in one short transaction under the store's write lock (as ``judge._rate`` shares a model's
request rate): two replicas can never both take the last one. Tokens are reserved as the
prompt's estimate and settled to what the judge reported once it answers, so the token
budget can be passed by at most the completions of requests already in flight."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, insert, select, update

from ragmeter.config import OnlineRule
from ragmeter.errors import JudgeError
from ragmeter.judge.tokens import count_tokens
from ragmeter.store.db import Store
from ragmeter.store.locks import write_lock
from ragmeter.store.online_models import OnlineBudgetRecord

__all__ = ["BudgetGate", "BudgetLedger", "Spent", "utc_day"]


def utc_day(now: datetime | None = None) -> str:
    """The UTC day, ``YYYY-MM-DD``, budgets are counted in."""
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class Spent:
    """What a rule spent on one day."""

    requests: int = 0
    tokens: int = 0
    traces: int = 0


class BudgetLedger:
    """Per rule and UTC day: judge requests and tokens spent, and traces scored."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def spent(self, rule: str, day: str) -> Spent:
        table = OnlineBudgetRecord
        with self.store.engine.connect() as connection:
            found = connection.execute(
                select(table.requests, table.tokens, table.traces).where(
                    table.rule == rule, table.day == day
                )
            ).first()
        return Spent(*found) if found is not None else Spent()

    def spent_today(self, rules: list[str], day: str) -> dict[str, Spent]:
        """Each of ``rules``' spending on ``day`` (in one query)."""
        table = OnlineBudgetRecord
        with self.store.engine.connect() as connection:
            found = connection.execute(
                select(table.rule, table.requests, table.tokens, table.traces).where(
                    table.day == day, table.rule.in_(rules)
                )
            ).all()
        spent = {name: Spent(*rest) for name, *rest in found}
        return {name: spent.get(name, Spent()) for name in rules}

    def reserve(self, rule: OnlineRule, day: str, tokens: int) -> str | None:
        """Take one request and ``tokens`` of ``rule``'s budget for ``day``; or, taking
        nothing, the reason it is spent."""
        table = OnlineBudgetRecord
        with self.store.engine.connect() as connection, connection.begin():
            write_lock(connection, f"ragmeter-online-budget {rule.name}")
            found = connection.execute(
                select(table.requests, table.tokens).where(
                    table.rule == rule.name, table.day == day
                )
            ).first()
            requests, used = found if found is not None else (0, 0)
            if requests + 1 > rule.max_requests_per_day:
                return (
                    f"the daily judge budget of online rule '{rule.name}' is spent: "
                    f"{requests} of {rule.max_requests_per_day} requests on {day} (UTC)"
                )
            if used + tokens > rule.max_tokens_per_day:
                return (
                    f"the daily judge budget of online rule '{rule.name}' is spent: "
                    f"{used:,} of {rule.max_tokens_per_day:,} tokens on {day} (UTC)"
                )
            self._add(connection, rule.name, day, found is None, requests=1, tokens=tokens)
        return None

    def add(self, rule: str, day: str, *, tokens: int = 0, traces: int = 0) -> None:
        """Count ``tokens`` more (a settled reply's difference from its estimate; may be
        negative) and ``traces`` scored."""
        if not tokens and not traces:
            return
        table = OnlineBudgetRecord
        with self.store.engine.connect() as connection, connection.begin():
            write_lock(connection, f"ragmeter-online-budget {rule}")
            found = connection.execute(
                select(table.requests).where(table.rule == rule, table.day == day)
            ).first()
            self._add(connection, rule, day, found is None, tokens=tokens, traces=traces)

    @staticmethod
    def _add(connection: Connection, rule: str, day: str, new: bool, **counts: int) -> None:
        table = OnlineBudgetRecord
        if new:
            values = {"requests": 0, "tokens": 0, "traces": 0} | counts
            connection.execute(insert(table).values(rule=rule, day=day, **values))
            return
        changes = {name: getattr(table, name) + n for name, n in counts.items()}
        connection.execute(
            update(table).where(table.rule == rule, table.day == day).values(**changes)
        )


class BudgetGate:
    """The judge engine's gate for one rule (``JudgeEngine.gate``): each request reserves its
    place in the day's budget before it is sent, or fails with ``JudgeError`` saying the
    budget is spent (the metric's score is then null with that reason)."""

    def __init__(self, ledger: BudgetLedger, rule: OnlineRule) -> None:
        self.ledger = ledger
        self.rule = rule

    async def before(self, messages: list[dict[str, str]]) -> tuple[str, int]:
        """Reserve a request and its prompt's estimated tokens; the day and the estimate."""
        estimate = sum(count_tokens(m["content"]) for m in messages)
        day = utc_day()
        refused = await asyncio.to_thread(self.ledger.reserve, self.rule, day, estimate)
        if refused is not None:
            raise JudgeError(refused)
        return day, estimate

    async def after(self, ticket: tuple[str, int], tokens: int) -> None:
        """Settle a reply: count the tokens it really took instead of the estimate."""
        day, estimate = ticket
        await asyncio.to_thread(self.ledger.add, self.rule.name, day, tokens=tokens - estimate)
