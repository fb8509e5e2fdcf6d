"""An alert's webhook: a JSON POST to the rule's URL, under the same rules as the service's
apps (``apps._hosts.HostPolicy``): the host is resolved, a loopback, private or link-local
address is refused unless ``[online] allow_webhook_hosts`` lists it, the connection goes to
the checked address (a DNS answer that changes cannot lead elsewhere), no redirect is
followed and no proxy of the environment is used. Timeouts, a capped read of the reply (it
is never shown) and the shared retry policy (``_retry``: no answer, 408, 429 and 5xx)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx

from ragmeter import __version__
from ragmeter._retry import RetryPolicy, TryAgain, retry_after, retryable_status
from ragmeter.apps._hosts import HostPolicy, guarded_transport, refusal, resolve
from ragmeter.errors import public_url

__all__ = ["MAX_REPLY_BYTES", "SETTING", "WebhookSender", "webhook_policy"]

#: the setting that lists the non-public hosts webhooks may reach
SETTING = "[online] allow_webhook_hosts"
#: the most of a reply read (and thrown away): a receiver cannot make the server read more
MAX_REPLY_BYTES = 64_000


def webhook_policy(
    allowed: Iterable[str], resolver: Callable[[str], list[str]] = resolve
) -> HostPolicy:
    """The hosts webhooks may reach: public ones and those ``allowed`` lists (``resolver``
    turns a host into addresses: the system's by default)."""
    return HostPolicy(allowed, resolver, rule=SETTING)


class WebhookSender:
    """Posts alert payloads. ``send`` never raises for the receiver's sake: it answers what
    happened, as the alert event keeps it ("sent: HTTP 200", "refused: ...", "failed: ...")."""

    def __init__(self, policy: HostPolicy, *, timeout: float = 10.0, attempts: int = 3) -> None:
        self.policy = policy
        self.timeout = timeout
        self.retry = RetryPolicy(attempts=attempts, base_delay=0.5, max_delay=10.0)

    def refuses(self, url: str) -> str | None:
        """Why ``url`` may not be posted to (not an http(s) URL, or its host is not allowed),
        or None."""
        return self.policy.refuses_url(url)

    async def send(self, url: str, payload: Mapping[str, Any]) -> str:
        """POST ``payload`` as JSON to ``url``; the outcome in words."""
        why = self.refuses(url)
        if why is not None:
            return f"refused: {why}"
        async with httpx.AsyncClient(
            transport=guarded_transport(self.policy, max_connections=4),
            timeout=self.timeout,
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": f"ragmeter/{__version__}", "Accept-Encoding": "identity"},
        ) as client:
            try:
                status = await self.retry.run(lambda _attempt: self._try(client, url, payload))
            except TryAgain as exc:
                return f"failed: {exc.reason} (after {self.retry.attempts} attempts)"
            except httpx.HTTPError as exc:
                refused = refusal(exc)
                if refused is not None:
                    return f"refused: {refused}"
                return f"failed: {type(exc).__name__}"
        if 300 <= status < 400:
            return f"failed: HTTP {status}, a redirect, which webhooks do not follow"
        if status >= 400:
            return f"failed: HTTP {status}"
        return f"sent: HTTP {status}"

    async def _try(self, client: httpx.AsyncClient, url: str, payload: Mapping[str, Any]) -> int:
        where = public_url(url)
        try:
            async with client.stream("POST", url, json=dict(payload)) as response:
                read = 0
                async for chunk in response.aiter_raw():
                    read += len(chunk)
                    if read >= MAX_REPLY_BYTES:  # the rest is not read
                        break
                status, wait = response.status_code, retry_after(response.headers)
        except httpx.TimeoutException:
            raise TryAgain(f"{where} gave no answer within {self.timeout:g} s") from None
        except httpx.TransportError as exc:
            if refusal(exc) is not None:
                raise
            raise TryAgain(f"cannot reach {where}: {type(exc).__name__}") from None
        if retryable_status(status):
            raise TryAgain(f"{where} answered HTTP {status}", retry_after=wait)
        return status
