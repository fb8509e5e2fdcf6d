"""What an app made or run by the service may use: the operator's models, the operator's
allow-list of secrets, hosts the operator allows, and capped reply sizes and timeouts.

The command line runs apps without a policy: a local user may name any variable, URL or host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragmeter.apps.configs import (
    AgentAppConfig,
    AnyAppConfig,
    CallableAppConfig,
    HttpAppConfig,
    RagAppConfig,
)
from ragmeter.config import Settings
from ragmeter.errors import ConfigError, LimitError

if TYPE_CHECKING:  # httpx and its transports load when a policy is made (the service's)
    from ragmeter.apps._hosts import HostPolicy

__all__ = ["AppPolicy"]


@dataclass(frozen=True)
class AppPolicy:
    """The service's rules for apps; ``check`` raises naming the field at fault. ``models``
    maps each declared model to its base URL; ``secrets`` each variable apps may send to the
    hosts it may go to (None: any host apps may reach)."""

    models: dict[str, str]
    secrets: dict[str, tuple[str, ...] | None]
    hosts: HostPolicy
    max_reply_bytes: int
    max_timeout: float
    max_top_k: int

    @classmethod
    def from_settings(cls, settings: Settings) -> AppPolicy:
        server = settings.server
        secrets = server.app_secrets
        from ragmeter.apps._hosts import HostPolicy

        return cls(
            models={name: model.base_url for name, model in settings.models.items()},
            secrets=(
                {name: tuple(hosts) for name, hosts in secrets.items()}
                if isinstance(secrets, dict)
                else dict.fromkeys(secrets)
            ),
            hosts=HostPolicy(server.allow_app_hosts),
            max_reply_bytes=int(server.max_app_reply_mb * 1_000_000),
            max_timeout=server.max_app_timeout,
            max_top_k=server.max_top_k,
        )

    def check_model(self, name: str, field: str) -> None:
        """ConfigError unless ``name`` is a model the operator declared."""
        if name not in self.models:
            known = ", ".join(sorted(self.models)) or "none"
            raise ConfigError(
                f"{field}: unknown model '{name}'; this server's ragmeter.toml declares: "
                f"{known} (GET /models lists them)"
            )

    def _bound(self, variable: str) -> HostPolicy | None:
        from ragmeter.apps._hosts import HostPolicy

        hosts = self.secrets.get(variable)
        if hosts is None:
            return None
        return HostPolicy(hosts, public=False, rule=f"[server] app_secrets.{variable}")

    def check_secret(self, variable: str | None, field: str, destination: str) -> None:
        """ConfigError unless ``variable`` is None, or in ``[server] app_secrets`` and allowed
        to go to ``destination`` (the URL the app sends it to)."""
        if variable is None:
            return
        if variable not in self.secrets:
            allowed = ", ".join(sorted(self.secrets)) or "none"
            raise ConfigError(
                f"{field}: ${variable} is not a secret apps may use on this server; the "
                f"operator allows ([server] app_secrets): {allowed}"
            )
        bound = self._bound(variable)
        refused = None if bound is None else bound.refuses_url(destination)
        if refused is not None:
            raise ConfigError(f"{field}: ${variable} may not be sent there: {refused}")

    def hosts_for(self, config: HttpAppConfig) -> HostPolicy:
        """Where an HttpApp may connect: only its secret's hosts when the secret is bound to
        some, else wherever apps may reach."""
        bound = None if config.api_key_env is None else self._bound(config.api_key_env)
        return self.hosts if bound is None else bound

    def check(self, config: AnyAppConfig, *, creating: bool = True) -> None:
        """Refuse settings an app made (``creating``) or run by the service may not have. A
        callable app can only be registered on the server itself, so the service runs one."""
        if isinstance(config, CallableAppConfig | AgentAppConfig):
            if not creating:  # registered on the server itself: the operator chose its tools
                if isinstance(config, AgentAppConfig) and config.base_url is None:
                    self.check_model(config.model, "config.model")
                return
            how = "--callable" if isinstance(config, CallableAppConfig) else "--tools"
            what = "runs code" if how == "--callable" else "calls tools"
            raise ConfigError(
                f"config.kind: a {config.kind} app {what} on the server's behalf; register it "
                f"with 'ragmeter app add {how}' on the server itself"
            )
        if isinstance(config, RagAppConfig):
            if config.base_url is not None:
                raise ConfigError(
                    "config.base_url: not accepted over the API; name a model the operator "
                    "declared in ragmeter.toml ([models.NAME]) as config.model"
                )
            self.check_model(config.model, "config.model")
            destination = self.models[config.model]
        else:
            destination = config.url
        self.check_secret(config.api_key_env, "config.api_key_env", destination)
        if isinstance(config, RagAppConfig):
            if config.top_k > self.max_top_k:
                raise LimitError(
                    f"config.top_k: {config.top_k} is more than this server retrieves",
                    setting=f"[server] max_top_k = {self.max_top_k}",
                )
        elif creating and (refused := self.hosts_for(config).refuses_url(config.url)) is not None:
            raise ConfigError(f"config.url: {refused}")
        elif config.timeout > self.max_timeout:
            raise LimitError(
                f"config.timeout: {config.timeout:g} s is longer than this server waits",
                setting=f"[server] max_app_timeout = {self.max_timeout:g}",
            )
