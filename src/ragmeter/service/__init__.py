"""The HTTP service: DB-GPT-compatible evaluation API, runs, resources, Bearer auth."""

from ragmeter.service.app import API_PREFIX, create_app
from ragmeter.service.server import DEFAULT_PORT, check_bind, serve

__all__ = ["API_PREFIX", "DEFAULT_PORT", "check_bind", "create_app", "serve"]
