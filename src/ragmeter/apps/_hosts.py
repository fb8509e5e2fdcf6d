"""Which hosts an app made over the API may reach, checked on the address actually connected.

Loopback, private, link-local and other non-public addresses are refused unless the operator
lists them (``[server] allow_app_hosts``: host names, addresses or networks). The host is resolved
once, every address is checked, and the connection goes to a checked address, whose peer address
is checked again once connected: a DNS answer that changes between the check and the connection
(rebinding) cannot lead anywhere else.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import httpcore
import httpx

__all__ = [
    "HostNotAllowed",
    "HostPolicy",
    "embedded_ipv4",
    "guarded_transport",
    "refusal",
    "resolve",
    "url_host",
]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class HostNotAllowed(httpcore.ConnectError):
    """The destination is not one apps may reach; retrying cannot help."""


#: IPv6 prefixes that carry an IPv4 address in their last 32 bits: IPv4-compatible (::/96,
#: deprecated), IPv4-mapped, IPv4-translated (SIIT), NAT64's well-known and local-use prefixes
_LOW_32_PREFIXES = tuple(
    ipaddress.IPv6Network(text)
    for text in ("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48")
)
#: ISATAP's interface identifier, 0000:5efe or 0200:5efe (the u and g bits masked off)
_ISATAP_MASK, _ISATAP = 0xFCFF_FFFF, 0x0000_5EFE
_SITE_LOCAL = ipaddress.IPv6Network("fec0::/10")  # deprecated, still routed inside sites


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, which is where it leads: mapped,
    compatible, translated and NAT64 forms, 6to4 (2002::/16), Teredo (2001::/32: its server
    and its client) and ISATAP (an interface id of 5efe)."""
    value = int(address)
    if any(address in prefix for prefix in _LOW_32_PREFIXES):
        return [ipaddress.IPv4Address(value & 0xFFFF_FFFF)]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    if (value >> 32) & _ISATAP_MASK == _ISATAP:
        return [ipaddress.IPv4Address(value & 0xFFFF_FFFF)]
    return []


def _address(text: str) -> Address:
    return ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%eth0)


def _public(address: Address) -> bool:
    if address.is_multicast or not address.is_global:
        return False
    return not (isinstance(address, ipaddress.IPv6Address) and address in _SITE_LOCAL)


#: one label of a host name (in its ASCII form, as resolvers are asked)
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_PORTS = range(1, 65536)


def url_host(url: str) -> str:
    """The host of an http(s) URL an app may be given; ValueError saying what is wrong with
    it otherwise: not a URL, credentials in it, a port out of range, a host name that is not
    one (an empty, overlong or invalid label, an invalid IDNA or punycode form)."""
    try:
        parsed = httpx.URL(url)
        host, raw_host, port = parsed.host, parsed.raw_host, parsed.port
    except (httpx.InvalidURL, ValueError) as exc:  # IDNA errors are ValueErrors
        raise ValueError(f"'{url}' is not a valid URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"'{url}' is not an http or https URL")
    if not host:
        raise ValueError(f"'{url}' names no host")
    if parsed.userinfo:
        raise ValueError(
            f"'{parsed.copy_with(username=None, password=None)}' carries a user name or "
            "password; send a key from [server] app_secrets as api_key_env instead"
        )
    if port is not None and port not in _PORTS:
        raise ValueError(f"'{url}' has port {port}, outside 1-65535")
    if ":" in host:  # an IPv6 literal, which httpx has checked
        if "%" in host:
            raise ValueError(f"'{url}' names an IPv6 zone, which apps may not use")
        return host
    name = raw_host.decode("ascii").lower()
    labels = name.removesuffix(".").split(".")
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(
            f"'{url}' has no valid host name: each dot-separated label must be 1 to 63 "
            "letters, digits, '-' or '_', 253 characters in all"
        )
    return host


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
        if self._listed(ip):
            return True
        carried = embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else []
        if carried:  # it leads where its IPv4 addresses do
            return all(self._listed(v4) or (self.public and _public(v4)) for v4 in carried)
        return self.public and _public(ip)

    def _listed(self, ip: Address) -> bool:
        return any(ip in network for network in self.networks if network.version == ip.version)

    def refusal(self, host: str) -> str:
        """Why ``host`` may not be reached."""
        if self.public:
            return (
                f"host '{host}' is a loopback, private, link-local or otherwise non-public "
                f"address, which this server may not reach unless {self.rule} lists it"
            )
        return f"host '{host}' is not one of the hosts {self.rule} allows"

    def refuses_url(self, url: str) -> str | None:
        """Why apps may not reach ``url`` (not a URL, or its host's addresses now are not
        allowed), or None, also when the host does not resolve yet: every connection is
        checked again in any case."""
        try:
            host = url_host(url)
        except ValueError as exc:
            return str(exc)
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
