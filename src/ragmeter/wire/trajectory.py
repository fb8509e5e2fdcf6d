"""An agent row's conversation step by step, and its expected tool calls aligned with the
calls made."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class TrajectoryCall(BaseModel):
    """One tool call: its name and arguments (a JSON value); for a call the agent made, the
    result its tool gave (null when the conversation has none)."""

    name: str
    arguments: Any = None
    result: str | None = None


class ArgumentDiff(BaseModel):
    """One argument of a pair of calls: its value in the expected and in the actual call
    (null where absent), and whether they are equal as JSON values."""

    key: str
    expected: Any = None
    actual: Any = None
    equal: bool


class TrajectoryPair(BaseModel):
    """An expected call and the actual call aligned with it, side by side: ``match`` (same
    name and arguments), ``arguments`` (same name, other arguments), ``missing`` (expected,
    not made), ``extra`` (made, not expected)."""

    status: Literal["match", "arguments", "missing", "extra"]
    expected: TrajectoryCall | None = None
    actual: TrajectoryCall | None = None
    arguments: list[ArgumentDiff] = Field(default_factory=list)


class TrajectoryStep(BaseModel):
    """One message of the conversation: role, text and the tool calls it made (with their
    results)."""

    role: str
    content: str = ""
    calls: list[TrajectoryCall] = Field(default_factory=list)


class Trajectory(BaseModel):
    """An agent row's conversation step by step, and its expected calls aligned with the
    calls made (in order, by name; empty when the row has no expected calls)."""

    steps: list[TrajectoryStep]
    pairs: list[TrajectoryPair]
