"""The background scorer of a server: every ``[online] score_every_seconds``, for each enabled
rule, the complete traces past its cursor whose last span arrived at least the rule's
``delay_seconds`` ago are matched, scored in batches (``RuleScorer``), their scores written,
and the cursor advanced in the store. A rule's next batch is held by one server at a time
(a lease on its cursor, renewed while the batch is scored), so replicas share the work and
a restart goes on where it stopped."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable

from ragmeter.config import OnlineRule, Settings
from ragmeter.errors import RagmeterError
from ragmeter.runs.online.budget import BudgetLedger
from ragmeter.runs.online.matching import matches
from ragmeter.runs.online.rule_store import RuleStore
from ragmeter.runs.online.scorer import RuleScorer
from ragmeter.runs.online.source import TraceSource

__all__ = ["OnlineScoring"]

log = logging.getLogger(__name__)

#: batches one rule scores per look before the next rule's turn
BATCHES_PER_LOOK = 50


class OnlineScoring:
    """Scores traces of ``source`` by the rules ``rules()`` gives (ragmeter.toml's and the
    stored ones), batch by batch."""

    def __init__(
        self,
        source: TraceSource,
        rules: Callable[[], list[OnlineRule]],
        store: RuleStore,
        ledger: BudgetLedger,
        settings: Callable[[], Settings],
        *,
        lease_s: float | None = None,
    ) -> None:
        self.source = source
        self.rules = rules
        self.store = store
        self.ledger = ledger
        #: the settings in force (a server re-reads ragmeter.toml when it changes)
        self.settings = settings
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._scorers: dict[str, RuleScorer] = {}
        self._lease_s = lease_s

    @property
    def lease_s(self) -> float:
        """How long a server's hold on a rule's cursor lasts unless renewed (it is renewed
        every third of it while a batch is scored): by default the longer of 2 minutes and
        10 looks."""
        if self._lease_s is not None:
            return self._lease_s
        return max(120.0, 10 * self.settings().online.score_every_seconds)

    def _scorer(self, rule: OnlineRule) -> RuleScorer:
        """The rule's scorer, made anew when the rule or its judge's settings changed."""
        settings = self.settings()
        judge = settings.models.get(rule.judge) if rule.judge else None
        found = self._scorers.get(rule.name)
        if found is None or found.rule != rule or found.judge_config != judge:
            found = self._scorers[rule.name] = RuleScorer(rule, settings, self.ledger)
        return found

    async def look(self, now_ns: int | None = None) -> int:
        """One look: every enabled rule scores what is ready, all at once (a rule waiting on
        its judge holds up no other). The traces scored."""
        rules = await asyncio.to_thread(self.rules)
        await self._forget({r.name for r in rules if r.enabled})
        done = await asyncio.gather(
            *(self._score_safely(rule, now_ns) for rule in rules if rule.enabled)
        )
        return sum(done)

    async def _score_safely(self, rule: OnlineRule, now_ns: int | None) -> int:
        """``score_rule``, a failure logged rather than raised: the other rules go on."""
        try:
            return await self.score_rule(rule, now_ns)
        except RagmeterError as exc:  # a rule gone wrong (its judge unknown now)
            log.warning("online rule '%s' cannot score: %s", rule.name, exc)
        except Exception:  # a bug, or the store away
            log.exception("online rule '%s' failed to score a batch", rule.name)
        return 0

    async def _forget(self, kept: set[str]) -> None:
        """Close the scorers of rules deleted or paused since the last look."""
        for name in [n for n in self._scorers if n not in kept]:
            await self._scorers.pop(name).aclose()

    async def score_rule(self, rule: OnlineRule, now_ns: int | None = None) -> int:
        """Score the rule's ready traces, a batch at a time, up to ``BATCHES_PER_LOOK``."""
        now = time.time_ns() if now_ns is None else now_ns
        until = now - int(rule.delay_seconds * 1e9)
        limit = self.settings().online.score_batch
        scored = 0
        for _ in range(BATCHES_PER_LOOK):
            cursor = await asyncio.to_thread(self.store.claim, rule.name, self.owner, self.lease_s)
            if cursor is None:
                return scored  # another server scores this rule now
            holding = asyncio.create_task(self._hold(rule.name))
            try:
                batch = await asyncio.to_thread(self.source.complete_since, cursor, until, limit)
                taken = [
                    p.trace for p in batch if p.trace.complete and matches(rule, p.trace, p.spans)
                ]
                if taken:
                    scores = await self._scorer(rule).score(taken)
                    await asyncio.to_thread(self.source.put_scores, scores)
            except BaseException:
                await asyncio.to_thread(self.store.advance, rule.name, self.owner, None, 0)
                raise
            finally:
                holding.cancel()
            last = batch[-1].cursor if batch else None
            await asyncio.to_thread(self.store.advance, rule.name, self.owner, last, len(taken))
            scored += len(taken)
            if len(batch) < limit:
                break
        return scored

    async def _hold(self, rule: str) -> None:
        """Renew this server's hold on the rule's cursor every third of the lease while a
        batch is scored (a slow judge outlasts any fixed lease), until cancelled."""
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                held = await asyncio.to_thread(self.store.renew, rule, self.owner, self.lease_s)
            except Exception:  # the store away a moment: try again at the next third
                log.exception("online rule '%s': cannot renew the hold on its cursor", rule)
                continue
            if not held:
                log.warning("online rule '%s': another server took its cursor", rule)
                return

    async def run(self) -> None:
        """Look every ``[online] score_every_seconds`` until cancelled (then the judges'
        connections are closed)."""
        try:
            while True:
                period = self.settings().online.score_every_seconds
                try:
                    await self.look()
                except Exception:  # the store is away a moment: look again later
                    log.exception("online rules cannot score now")
                await asyncio.sleep(period)
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        for scorer in self._scorers.values():
            await scorer.aclose()
        self._scorers.clear()
