"""Which executor scores a run's rows: ``local`` (None: this process) or ``ray`` (a Ray
cluster; its module, and ``ray``, imported only then)."""

from __future__ import annotations

from typing import Literal

from ragmeter.apps import AppPolicy
from ragmeter.config import Settings
from ragmeter.errors import ConfigError
from ragmeter.runs.execution.executor import Executor

__all__ = ["ExecutorKind", "executor_for"]

ExecutorKind = Literal["local", "ray"]


def executor_for(
    settings: Settings,
    store_url: str | None,
    kind: str | None = None,
    address: str | None = None,
    policy: AppPolicy | None = None,
) -> Executor | None:
    """The executor ``kind`` names (default: ``[executor] kind``), at ``address`` (default:
    ``[executor] address``), running apps under ``policy`` (the service's); None for the
    local one. A ConfigError for an unknown kind or a
    missing ``ray``."""
    config = settings.executor
    kind = kind or config.kind
    if kind == "local":
        if address is not None:
            raise ConfigError(
                "a Ray address is given but the executor is local: add --executor ray"
            )
        return None
    if kind != "ray":
        raise ConfigError(f"unknown executor '{kind}': local or ray")
    try:
        from ragmeter.runs.execution.ray_executor import RayExecutor
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise
        raise ConfigError("the Ray executor needs ray: pip install 'ragmeter[ray]'") from None
    chosen = config.model_copy(update={"kind": "ray", "address": address or config.address})
    return RayExecutor.from_config(settings, store_url, chosen, policy)
