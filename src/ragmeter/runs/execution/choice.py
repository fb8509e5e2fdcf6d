"""Which executor scores a run's rows: ``local`` (None: this process) or ``ray`` (a Ray
cluster; its module, and ``ray``, imported only then)."""

from __future__ import annotations

from typing import Literal

from ragmeter.apps import AppPolicy
from ragmeter.config import Settings
from ragmeter.errors import ConfigError
from ragmeter.knowledge.ingest import Ingester
from ragmeter.runs.execution.executor import Executor

__all__ = ["ExecutorKind", "executor_for", "ingester_for"]

ExecutorKind = Literal["local", "ray"]


def executor_for(
    settings: Settings,
    store_url: str | None,
    kind: str | None = None,
    address: str | None = None,
    policy: AppPolicy | None = None,
    *,
    join: bool = False,
) -> Executor | None:
    """The executor ``kind`` names (default: ``[executor] kind``), at ``address`` (default:
    ``[executor] address``), running apps under ``policy`` (the service's); None for the
    local one. A ConfigError for an unknown kind or a missing ``ray``, and with ``join``
    for a cluster out of reach (joined now, before a run is made or reopened, rather than
    by the first batch)."""
    if not _on_ray(settings, kind, address):
        return None
    from ragmeter.runs.execution.ray_executor import RayExecutor

    config = settings.executor
    chosen = config.model_copy(update={"kind": "ray", "address": address or config.address})
    executor = RayExecutor.from_config(settings, store_url, chosen, policy)
    if join:
        executor.join()
    return executor


def ingester_for(
    settings: Settings, kind: str | None = None, address: str | None = None
) -> Ingester | None:
    """What reads, chunks and embeds documents added to a space: None for this process, a
    ``RayIngester`` when the executor ``kind`` (default: ``[executor] kind``) is ``ray``."""
    if not _on_ray(settings, kind, address):
        return None
    from ragmeter.runs.execution.ray_ingest import RayIngester

    config = settings.executor
    return RayIngester(address=address or config.address, max_in_flight=config.max_in_flight)


def _on_ray(settings: Settings, kind: str | None, address: str | None) -> bool:
    """Whether the work goes to Ray (checked: a known kind, ``ray`` importable); False for
    this process."""
    kind = kind or settings.executor.kind
    if kind == "local":
        if address is not None:
            raise ConfigError(
                "a Ray address is given but the executor is local: add --executor ray"
            )
        return False
    if kind != "ray":
        raise ConfigError(f"unknown executor '{kind}': local or ray")
    try:
        import ray  # noqa: F401
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise
        raise ConfigError("the Ray executor needs ray: pip install 'ragmeter[ray]'") from None
    return True
