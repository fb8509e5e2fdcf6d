"""Packages whose public names load on first use, so that importing a package (and starting
the command line) does not import what only some of its names need."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, modules: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``modules`` (module -> names) is
    imported from its module when first asked for, then kept in the package."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
