"""The ``ragmeter`` command line."""

from ragmeter.cli.app import app, main

__all__ = ["app", "main"]
