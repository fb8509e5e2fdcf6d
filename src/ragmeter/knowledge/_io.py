"""Writing index files safely: through a temporary file moved into place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["replace_file", "save_array"]


def save_array(path: Path, array: np.ndarray) -> None:
    """``np.save`` to exactly ``path`` (np.save would add ``.npy`` to a temporary name)."""
    with path.open("wb") as handle:
        np.save(handle, array)


def replace_file(target: Path, write: Callable[[Path], None]) -> None:
    """Write ``target`` through a temporary file, then move it into place."""
    temporary = target.with_name(target.name + ".tmp")
    write(temporary)
    temporary.replace(target)
