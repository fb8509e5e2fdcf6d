"""The judge engine every LLM metric shares: one OpenAI-compatible client per model with
structured output, re-asks, an adaptive concurrency limit (one per endpoint and model in the
process), retries, timeouts, a cache and usage counters. An endpoint that cannot be reached
at all fails the evaluation after a few requests, naming its URL."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragmeter._retry import RetryPolicy, TryAgain, retry_after, retryable_status
from ragmeter.errors import JudgeError, LimitError, StoreError, public_url
from ragmeter.judge._limiter import AdaptiveLimiter, limiter_for
from ragmeter.judge._parse import extract_json
from ragmeter.judge._reach import answers_http
from ragmeter.judge.base import RequestGate
from ragmeter.judge.cache import CachedReply, JudgeCache, cache_key
from ragmeter.judge.tokens import count_tokens
from ragmeter.judge.transport import import_transport, reply_parts
from ragmeter.judge.usage import Usage

if TYPE_CHECKING:
    from ragmeter.judge._rate import Place, StoreRate
    from ragmeter.judge.chat import ChatClient, ChatConnectionError, ChatStatusError

_log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "MAX_PROMPT_CHARS",
    "JudgeEngine",
    "JudgeSettings",
    "StructuredMode",
    "import_transport",
    "reply_parts",
]

M = TypeVar("M", bound=BaseModel)
StructuredMode = Literal["auto", "json_schema", "json_object", "prompt"]
#: connection failures (refused, DNS) before any answer after which an endpoint is unreachable
UNREACHABLE_AFTER = 3
#: requests in flight to one model when its configuration does not say
DEFAULT_MAX_CONCURRENCY = 16
#: characters of one prompt (all its messages): far beyond any model's context window, so a
#: longer prompt is a row's texts gone wrong (or a template that copies them), never sent
MAX_PROMPT_CHARS = 1_000_000


class JudgeSettings(BaseModel):
    """How to reach and drive one judge model."""

    model_config = ConfigDict(frozen=True)

    model: str
    base_url: str
    api_key: str = Field(default="EMPTY", repr=False)
    name: str | None = None
    timeout: float = Field(default=60.0, gt=0)
    #: requests in flight to this model across the process (its limiter's maximum)
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1)
    #: requests in any minute across every process sharing ``rate_store`` (None: no limit)
    requests_per_minute: int | None = Field(default=None, ge=1)
    #: the store counting them (a SQLAlchemy URL)
    rate_store: str | None = None
    #: tries after the first, under the shared retry policy (``ragmeter._retry``); its
    #: backoff starts at ``retry_base_delay``, and it and Retry-After stop at ``retry_max_delay``
    max_retries: int = Field(default=4, ge=0)
    max_reasks: int = Field(default=2, ge=0)
    temperature: float = 0.0
    #: the sample of a repeated judgement (``ragmeter eval --repeats``): sent as the request's
    #: ``seed`` and part of the cache key, so each repeat has its own cached replies; None,
    #: the usual single judgement, sends none
    seed: int | None = None
    structured: StructuredMode = "auto"
    retry_base_delay: float = Field(default=0.5, ge=0)
    retry_max_delay: float = Field(default=30.0, ge=0)


class _Unusable(Exception):
    """A reply that arrived but cannot be used; the engine re-asks quoting the reason."""


class JudgeEngine:
    """Asks one judge model. ``ask`` returns a validated pydantic reply; ``ask_text`` free text
    (DB-GPT-style templates); ``complete`` is the plain ``Judge`` protocol.

    Every call adds what it cost to the ``usage`` it is given and to ``total``. A reply that
    still fails after ``max_reasks`` re-asks, or a request that fails after ``max_retries``,
    raises ``JudgeError`` with the reason; the metric turns that into a null score.

    Requests in flight are bounded by the process's limiter for (base_url, model), shared with
    every other engine of that model; the first engine sets its maximum. Until the endpoint
    has answered once, requests go one at a time: when the first few fail to connect
    (refused, DNS), ``fatal`` names the endpoint as unreachable and every call raises it.
    """

    def __init__(self, settings: JudgeSettings, cache: JudgeCache | None = None) -> None:
        self.settings = settings
        self.cache = cache
        self.total = Usage()
        #: whether this endpoint is ragmeter's scripted judge (its replies say so)
        self.scripted = False
        self._mode: StructuredMode = settings.structured
        self._client: ChatClient | None = None
        self._probe: asyncio.Lock | None = None
        self._reach_check: asyncio.Future[None] | None = None
        #: the endpoint answered (anything but a connection failure) at least once
        self._reached = False
        self._connect_failures = 0
        self.fatal: str | None = None
        #: asked before each request (an online rule's daily budget); None: none
        self.gate: RequestGate | None = None
        #: per event loop, the reply each request key being asked will get (None: no usable
        #: reply): with a cache, an identical request made meanwhile waits for it instead of
        #: being sent (it would have found it cached had it come a moment later)
        self._asking: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Future[CachedReply | None]]
        ] = weakref.WeakKeyDictionary()

    @property
    def label(self) -> str:
        return self.settings.name or self.settings.model

    @property
    def limiter(self) -> AdaptiveLimiter:
        """The process's limiter for this endpoint and model."""
        settings = self.settings
        return limiter_for(settings.base_url, settings.model, settings.max_concurrency)

    async def _within_rate(self) -> tuple[StoreRate, Place] | None:
        """Wait for a place in the model's requests per minute, where it has a limit: the
        rate and the place taken (None: no limit)."""
        settings = self.settings
        if settings.requests_per_minute is None or settings.rate_store is None:
            return None
        from ragmeter.judge._rate import rate_for
        from ragmeter.store.db import open_store

        store = open_store(settings.rate_store)
        rate = rate_for(store, settings.base_url, settings.model, settings.requests_per_minute)
        return rate, await rate.acquire()

    @staticmethod
    async def _sent_late(taken: tuple[StoreRate, Place] | None, sent: float) -> None:
        """A request sent late after its place was taken (``StoreRate.late``) stamps the
        place again with when it was sent (it reached the model that late). A store that fails
        here costs the stamp, never the reply."""
        if taken is None or not taken[0].late(taken[1], sent):
            return
        try:
            await asyncio.to_thread(taken[0].stamp, taken[1], sent)
        except StoreError as exc:
            _log.warning("judge: could not stamp a late request's place in the rate: %s", exc)

    async def _ensure_client(self) -> tuple[ChatClient, asyncio.Lock]:
        """The client and the probe lock, made on first use in the running event loop. Its
        HTTP stack (httpx, ~0.15 s to import) is imported on a worker thread meanwhile, so the
        loop goes on with other work (rows' embeddings, a target) instead of stalling."""
        if self._client is None or self._probe is None:
            if self._reach_check is None and not self._reached:
                self._reach_check = asyncio.ensure_future(self._check_reached())
            chat = await asyncio.wrap_future(import_transport())
            if self._client is None or self._probe is None:  # not made by another call meanwhile
                # no retries of its own: ours must see the limiter and the counters
                self._client = chat.ChatClient(
                    self.settings.base_url, self.settings.api_key, self.settings.timeout
                )
                self._probe = asyncio.Lock()
        return self._client, self._probe

    async def _check_reached(self) -> None:
        """While the HTTP stack loads: ask the endpoint for its model list (``GET /models``, no
        generation). Any HTTP answer means it is reached, so the first judge requests need not
        go one at a time; no answer leaves that to them (the probe)."""
        url = self.settings.base_url.rstrip("/") + "/models"
        headers = {"Authorization": f"Bearer {self.settings.api_key}"}
        if await answers_http(url, headers, self.settings.timeout):
            self._reached = True

    async def aclose(self) -> None:
        if self._reach_check is not None:
            self._reach_check.cancel()
            self._reach_check = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None
            self._probe = None

    # -- public calls -------------------------------------------------------------------

    async def ask(
        self,
        system: str,
        user: str,
        reply_model: type[M],
        usage: Usage,
        *,
        check: Any = None,
    ) -> M:
        """A reply of type ``reply_model``; ``check(reply)`` may return a reason to re-ask."""
        schema = _json_schema(reply_model)

        def parse(content: str) -> M:
            try:
                reply = reply_model.model_validate(extract_json(content))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "reply"
                raise _Unusable(f"{where}: {first['msg']}") from exc
            except ValueError as exc:
                raise _Unusable(str(exc)) from exc
            problem = check(reply) if check is not None else None
            if problem:
                raise _Unusable(problem)
            return reply

        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        reply: M = await self._run(messages, schema, reply_model.__name__, parse, usage)
        return reply

    async def ask_text(self, prompt: str, usage: Usage) -> str:
        """The judge's free-text reply to ``prompt`` (one user message)."""

        def parse(content: str) -> str:
            if not content.strip():
                raise _Unusable("the reply is empty")
            return content

        text: str = await self._run([{"role": "user", "content": prompt}], None, "", parse, usage)
        return text

    async def complete(self, prompt: str) -> str:
        """The ``Judge`` protocol: free text, counted in ``total`` only."""
        return await self.ask_text(prompt, Usage())

    # -- the loop -----------------------------------------------------------------------

    async def _run(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None,
        schema_name: str,
        parse: Any,
        usage: Usage,
    ) -> Any:
        if self.fatal is not None:
            raise JudgeError(self.fatal)
        _check_size(messages)
        parameters: dict[str, Any] = {"temperature": self.settings.temperature}
        if self.settings.seed is not None:
            parameters["seed"] = self.settings.seed
        key = cache_key(
            model=self.settings.model,
            base_url=self.settings.base_url,
            messages=messages,
            parameters=parameters,
            schema=schema,
        )
        if self.cache is None:  # every request asked (a judge's noise measured on repeats)
            return (await self._ask(messages, schema, schema_name, parse, usage, key))[1]
        loop = asyncio.get_running_loop()
        asking = self._asking.setdefault(loop, {})
        leader = asking.get(key)
        if leader is not None:  # the same request is being asked: its reply, not a second one
            found = self._reused(await asyncio.shield(leader), parse, usage)
            if found is not _UNUSABLE:
                return found
        told: asyncio.Future[CachedReply | None] = loop.create_future()
        leading = key not in asking  # else: asked on its own (the first failed or did not suit)
        if leading:
            asking[key] = told
        reply: CachedReply | None = None
        try:
            reply = await asyncio.to_thread(self.cache.get, key)
            found = self._reused(reply, parse, usage)
            if found is not _UNUSABLE:  # else the expected reply changed shape: ask again
                return found
            reply, value = await self._ask(messages, schema, schema_name, parse, usage, key)
            return value
        finally:
            if leading:
                del asking[key]
                told.set_result(reply)

    def _reused(self, reply: CachedReply | None, parse: Any, usage: Usage) -> Any:
        """``parse`` of a reply kept or being shared, counted as cached; ``_UNUSABLE`` when
        there is none or it does not parse (the expected reply changed shape)."""
        if reply is None:
            return _UNUSABLE
        try:
            value = parse(reply.content)
        except _Unusable:
            return _UNUSABLE
        self._count(usage, cached=1, scripted=float(reply.scripted))
        return value

    async def _ask(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None,
        schema_name: str,
        parse: Any,
        usage: Usage,
        key: str,
    ) -> tuple[CachedReply, Any]:
        """Send the request (re-asking while its reply is unusable) and cache the reply; the
        reply and its parsed value."""
        conversation = list(messages)
        problem = ""
        for attempt in range(self.settings.max_reasks + 1):
            if attempt:
                self._count(usage, reasks=1)
            content, prompt_tokens, completion_tokens = await self._send(
                conversation, schema, schema_name, usage
            )
            try:
                value = parse(content)
            except _Unusable as exc:
                problem = str(exc)
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": _reask(problem, schema is not None)},
                ]
                continue
            reply = CachedReply(content, prompt_tokens, completion_tokens, self.scripted)
            if self.cache is not None:
                await asyncio.to_thread(
                    self.cache.put, key, self.settings.model, self.settings.base_url, reply
                )
            return reply, value
        raise JudgeError(
            f"judge reply unusable after {self.settings.max_reasks + 1} attempts: {problem}"
        )

    def _count(self, usage: Usage, **counts: float) -> None:
        delta = Usage(**counts)
        usage.add(delta)
        self.total.add(delta)

    def _response_format(self, schema: dict[str, Any] | None, name: str) -> Any:
        """The request's ``response_format``; None to leave it out."""
        if schema is None or self._mode == "prompt":
            return None
        if self._mode == "json_object":
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {"name": f"ragmeter_{name}"[:64], "schema": schema},
        }

    @property
    def retry(self) -> RetryPolicy:
        """The shared retry policy with this judge's tries and delays."""
        settings = self.settings
        return RetryPolicy(
            attempts=settings.max_retries + 1,
            base_delay=settings.retry_base_delay,
            max_delay=settings.retry_max_delay,
        )

    async def _send(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None,
        schema_name: str,
        usage: Usage,
    ) -> tuple[str, int, int]:
        client, probe = await self._ensure_client()
        policy = self.retry

        async def once(attempt: int) -> tuple[str, int, int]:
            if self.fatal is not None:
                raise JudgeError(self.fatal)
            if attempt > 1:
                self._count(usage, retries=1)
            request = (client, messages, schema, schema_name, usage, attempt)
            outcome = None if self._reached else await self._probe_try(probe, *request)
            return outcome if outcome is not None else await self._try(*request)

        try:
            return await policy.run(once)
        except TryAgain as exc:
            raise JudgeError(
                f"judge request failed after {policy.attempts} tries: {exc.reason}"
            ) from None

    async def _probe_try(self, probe: asyncio.Lock, *request: Any) -> tuple[str, int, int] | None:
        """One request at a time until the endpoint has answered (then None: go ahead), so a
        dead URL costs ``UNREACHABLE_AFTER`` requests, not one per row."""
        async with probe:
            if self.fatal is not None:
                raise JudgeError(self.fatal)
            if self._reached:
                return None
            outcome: tuple[str, int, int] = await self._try(*request)
            return outcome

    async def _try(self, *request: Any) -> tuple[str, int, int]:
        """``_request`` through the gate, when the engine has one."""
        gate = self.gate
        if gate is None:
            return await self._request(*request)
        ticket = await gate.before(request[1])
        reply = await self._request(*request)
        await gate.after(ticket, reply[1] + reply[2])
        return reply

    async def _request(
        self,
        client: ChatClient,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None,
        schema_name: str,
        usage: Usage,
        attempt: int,
    ) -> tuple[str, int, int]:
        """One request under the limiter: the reply; TryAgain when another try may help,
        JudgeError when it cannot."""
        from ragmeter.judge.chat import ChatConnectionError, ChatStatusError, ChatTimeout

        limiter = self.limiter
        await limiter.acquire()
        try:
            taken = await self._within_rate()  # last: the place is taken as the request leaves
        except BaseException:
            limiter.release()
            raise
        mode = self._mode
        started = time.perf_counter()
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature,
        }
        response_format = self._response_format(schema, schema_name)
        if response_format is not None:
            body["response_format"] = response_format
        if self.settings.seed is not None:
            body["seed"] = self.settings.seed
        sent = time.time()  # until the body is written: then, that moment

        def written() -> None:
            nonlocal sent
            sent = time.time()

        try:
            content = await client.complete(body, on_written=written)
        except ChatTimeout:
            self._reached = True  # something listens there; it is slow
            raise TryAgain(f"no reply within the {self.settings.timeout:g}s timeout") from None
        except ChatConnectionError as exc:
            raise self._connection_failed(exc) from None
        except ChatStatusError as exc:
            self._reached = True
            raise self._refused(exc, mode, schema is not None, attempt) from None
        else:
            self._reached = True
            limiter.succeeded()
            return self._read(content, messages, usage)
        finally:
            self._count(usage, requests=1, latency_s=time.perf_counter() - started)
            limiter.release()
            await self._sent_late(taken, sent)

    def _refused(
        self, exc: ChatStatusError, mode: StructuredMode, structured: bool, attempt: int
    ) -> TryAgain:
        """An HTTP error answer: the TryAgain to raise when the retry policy says another try
        may help, or JudgeError (``fatal`` for the endpoint)."""
        status = exc.status_code
        if status == 429:
            pause = self.retry.delay(attempt, retry_after(exc.headers))
            self.limiter.rate_limited(pause)
            # the limiter holds everyone back until the pause has passed
            return TryAgain(f"rate limited (429) {self.settings.max_retries + 1} times", wait=0.0)
        if status == 400:
            if structured and self._downgrade(mode):
                return TryAgain(f"endpoint refused the response format: {exc.message}", wait=0.0)
            raise JudgeError(f"judge refused the request: it answered {exc.message}") from exc
        if status in (401, 403):
            self.fatal = f"judge '{self.label}' refused the API key: {exc.message}"
            raise JudgeError(self.fatal) from exc
        if status == 404 or 300 <= status < 400:
            self.fatal = f"judge '{self.label}' at {self._where}: {exc.message}"
            raise JudgeError(self.fatal) from exc
        problem = f"the judge answered {exc.message}"
        if not retryable_status(exc.status_code):
            raise JudgeError(f"judge refused the request: {problem}") from exc
        return TryAgain(problem, retry_after=retry_after(exc.headers))

    def _connection_failed(self, exc: ChatConnectionError) -> TryAgain:
        """No connection (refused, DNS, dropped): retried, unless the endpoint never answered
        and this has happened ``UNREACHABLE_AFTER`` times: then the endpoint is unreachable."""
        reason = str(exc)
        if not self._reached:
            self._connect_failures += 1
            if self._connect_failures >= UNREACHABLE_AFTER:
                self.fatal = f"judge '{self.label}' at {self._where} is unreachable: {reason}"
                raise JudgeError(self.fatal) from exc
        return TryAgain(f"connection failed: {reason}")

    @property
    def _where(self) -> str:
        return public_url(self.settings.base_url)

    def _read(
        self, body: bytes, messages: list[dict[str, str]], usage: Usage
    ) -> tuple[str, int, int]:
        content, prompt_tokens, completion_tokens, scripted = reply_parts(body)
        if scripted:
            self.scripted = True
            self._count(usage, scripted=1)
        if prompt_tokens is None or completion_tokens is None:
            # the server did not say: estimate, so the counters are never blank
            prompt_tokens = sum(count_tokens(m["content"]) for m in messages)
            completion_tokens = count_tokens(content)
        self._count(usage, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        return content, prompt_tokens, completion_tokens

    def _downgrade(self, refused: StructuredMode) -> bool:
        """json_schema -> json_object -> prompt only, when the endpoint refuses a format.
        ``refused`` is the mode the failed request used (others may have moved on already)."""
        if self.settings.structured != "auto":
            return False
        if self._mode != refused:
            return True  # a concurrent request already stepped down: just try again
        order: list[StructuredMode] = ["auto", "json_object", "prompt"]
        index = order.index(self._mode) if self._mode in order else len(order) - 1
        if index + 1 >= len(order):
            return False
        self._mode = order[index + 1]
        return True


@functools.lru_cache(maxsize=256)
def _json_schema(reply_model: type[BaseModel]) -> dict[str, Any]:
    """A reply model's JSON schema, made once per model (pydantic builds it anew each call).
    Callers only read it."""
    return reply_model.model_json_schema()


_UNUSABLE = object()


def _check_size(messages: list[dict[str, str]]) -> None:
    """LimitError (the row's failure, of kind input) for a prompt over ``MAX_PROMPT_CHARS``."""
    size = sum(len(m["content"]) for m in messages)
    if size > MAX_PROMPT_CHARS:
        raise LimitError(
            f"the judge prompt holds {size:,} characters, too many to send: the row's texts "
            "are too long for a judge",
            setting=f"at most {MAX_PROMPT_CHARS:,} characters per judge prompt",
        )


def _reask(problem: str, structured: bool) -> str:
    what = "the corrected JSON object" if structured else "a corrected reply"
    return f"Your reply could not be used: {problem}. Reply again with only {what}."
