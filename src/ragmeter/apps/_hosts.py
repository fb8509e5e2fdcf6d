"""Which hosts an app made over the API may reach, checked on the address actually connected.

Loopback, private, link-local and other non-public addresses are refused unless the operator
lists them (``[server] allow_app_hosts``: host names, addresses or networks). The host is resolved
once, every address is checked, and the connection goes to a checked address, whose peer address
is checked again once connected: a DNS answer that changes between the check and the connection
(rebinding) cannot lead anywhere else.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import httpcore
import httpx

__all__ = ["HostNotAllowed", "HostPolicy", "guarded_transport", "refusal", "resolve"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class HostNotAllowed(httpcore.ConnectError):
    """The destination is not one apps may reach; retrying cannot help."""


def _address(text: str) -> Address:
    address = ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%eth0)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    return address


def _host_name(host: str) -> str:
    return host.strip("[]").rstrip(".").lower()


def resolve(host: str) -> list[str]:
    """The addresses ``host`` resolves to (an address resolves to itself); OSError if none."""
    found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


class HostPolicy:
    """Public addresses (unless not ``public``), plus the hosts, addresses and networks in
    ``allowed``; ``rule`` is the setting that lists them, for messages. ``resolver`` turns a
    host into addresses (the system's resolver by default)."""

    def __init__(
        self,
        allowed: Iterable[str] = (),
        resolver: Callable[[str], list[str]] = resolve,
        *,
        public: bool = True,
        rule: str = "[server] allow_app_hosts",
    ) -> None:
        self.resolver = resolver
        self.public = public
        self.rule = rule
        self.networks: list[Network] = []
        self.names: set[str] = set()
        for entry in allowed:
            text = entry.strip()
            if not text:
                continue
            try:
                self.networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
            except ValueError:
                self.names.add(_host_name(text))

    def allows(self, host: str, address: str) -> bool:
        """Whether a connection to ``host`` may go to ``address`` (one of its addresses)."""
        if _host_name(host) in self.names:
            return True
        ip = _address(address)
        if self.public and ip.is_global and not ip.is_multicast:
            return True
        return any(ip in network for network in self.networks if network.version == ip.version)

    def refusal(self, host: str) -> str:
        """Why ``host`` may not be reached."""
        if self.public:
            return (
                f"host '{host}' is a loopback, private, link-local or otherwise non-public "
                f"address, which apps on this server may not reach unless {self.rule} lists it"
            )
        return f"host '{host}' is not one of the hosts {self.rule} allows"

    def refuses_url(self, url: str) -> str | None:
        """Why apps may not reach ``url`` (not a URL, or its host's addresses now are not
        allowed), or None, also when the host does not resolve yet: every connection is
        checked again in any case."""
        try:
            host = httpx.URL(url).host
        except httpx.InvalidURL as exc:
            return f"'{url}' is not a valid URL: {exc}"
        if not host:
            return f"'{url}' names no host"
        try:
            addresses = self.resolver(host)
        except (OSError, UnicodeError):
            return None
        if addresses and not any(self.allows(host, a) for a in addresses):
            return self.refusal(host)
        return None


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host itself, connects only to allowed addresses and checks the peer."""

    def __init__(self, policy: HostPolicy) -> None:
        self.policy = policy
        self.inner = httpcore.AnyIOBackend()

    async def _addresses(self, host: str) -> list[str]:
        try:
            return await anyio.to_thread.run_sync(self.policy.resolver, host)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"cannot resolve host '{host}': {exc}") from exc

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._addresses(host)
        allowed = [a for a in addresses if self.policy.allows(host, a)]
        if not allowed:
            raise HostNotAllowed(self.policy.refusal(host))
        problem: Exception | None = None
        for address in allowed:
            try:
                stream = await self.inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                problem = exc
                continue
            peer = stream.get_extra_info("server_addr")
            if not peer or not self.policy.allows(host, str(peer[0])):
                await stream.aclose()
                raise HostNotAllowed(f"the connection to '{host}' reached a disallowed address")
            return stream
        assert problem is not None  # ``allowed`` was not empty
        raise problem

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, policy: HostPolicy, max_connections: int) -> None:
        super().__init__(trust_env=False)  # no proxy from the environment: it would be reached
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=max_connections,
            network_backend=_GuardedBackend(policy),
        )


def guarded_transport(policy: HostPolicy, max_connections: int = 100) -> httpx.AsyncBaseTransport:
    """An httpx transport that only connects where ``policy`` allows."""
    return _GuardedTransport(policy, max_connections)


def refusal(exc: BaseException) -> HostNotAllowed | None:
    """The ``HostNotAllowed`` behind an httpx error, if that is what it was."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, HostNotAllowed):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
