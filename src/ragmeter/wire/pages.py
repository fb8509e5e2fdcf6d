"""One page of a list, as every listing of the API answers it."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    """One page of a list, and how many items the whole list has."""

    items: list[T]
    total: int
    offset: int = 0
    limit: int = 0
