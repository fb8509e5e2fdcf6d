"""The compiled exact judge against the pure-Python one and a naive reference, and its errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics.retrieval import _judge
from ragmeter.metrics.retrieval._judge import judge_exact, judge_exact_python


def _python(retrieved: Any, relevant: Any) -> _judge.Judgements:
    lengths = np.fromiter(map(len, retrieved), dtype=np.int64, count=len(retrieved))
    return judge_exact_python(retrieved, relevant, lengths)


def _naive(ret: list[Any], rel: list[Any]) -> list[bool]:
    wanted, seen, out = set(rel), set(), []
    for item in ret:
        out.append(item in wanted and item not in seen)
        if item in wanted:
            seen.add(item)
    return out


class Clash:
    """Equal when the labels are; every instance hashes alike, so lookups walk a chain."""

    def __init__(self, label: int) -> None:
        self.label = label

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Clash) and other.label == self.label


def test_the_compiled_judge_is_built() -> None:
    assert _judge._compiled is not None, (
        "ragmeter.metrics.retrieval._exact was not built: the install needs a C compiler "
        "(scripts/install.sh installs gcc); without it the pure-Python judge is used"
    )


# ids that are equal but not identical objects (joined at draw time), ints equal to floats,
# and objects whose hashes all collide
items = st.one_of(
    st.integers(0, 15).map(lambda i: "".join(["d", str(i)])),
    st.integers(0, 4),
    st.integers(0, 4).map(float),
    st.integers(0, 3).map(Clash),
)


@given(
    st.lists(st.lists(items, max_size=30), max_size=8),
    st.data(),
)
@settings(max_examples=400, deadline=None)
def test_compiled_equals_python_and_the_naive_reference(
    retrieved: list[list[Any]], data: st.DataObject
) -> None:
    relevant = [data.draw(st.lists(items, max_size=40)) for _ in retrieved]
    compiled, python = judge_exact(retrieved, relevant), _python(retrieved, relevant)
    assert compiled.relevant.shape == python.relevant.shape
    assert compiled.relevant.tolist() == python.relevant.tolist()
    assert compiled.n_relevant.tolist() == python.n_relevant.tolist()
    assert compiled.n_retrieved.tolist() == python.n_retrieved.tolist()
    for row, (ret, rel) in enumerate(zip(retrieved, relevant, strict=True)):
        assert compiled.relevant[row, : len(ret)].tolist() == _naive(ret, rel)
        assert not compiled.relevant[row, len(ret) :].any()
        assert compiled.n_relevant[row] == len(set(rel))


def test_a_large_relevant_set_then_small_rows_reuse_the_table_cleanly() -> None:
    many = [f"d{i}" for i in range(5000)]
    retrieved = [many[::-1][:50], ["d1", "x", "d1"], ["y", "d4999"], []]
    relevant = [many, ["d1"], ["d4999", "d4999"], ["z"]]
    got = judge_exact(retrieved, relevant)
    assert got.relevant[0].all()
    assert got.relevant[1].tolist()[:3] == [True, False, False]
    assert got.relevant[2].tolist()[:2] == [False, True]
    assert not got.relevant[3].any()
    assert got.n_relevant.tolist() == [5000, 1, 1, 1]


def test_sets_tuples_and_frozensets_are_accepted() -> None:
    got = judge_exact([("a", "b"), ["c"]], [{"b"}, frozenset({"c", "d"})])
    assert got.relevant.tolist() == [[False, True], [True, False]]
    assert got.n_relevant.tolist() == [1, 2]


@pytest.mark.parametrize("judge", [judge_exact, _python], ids=["compiled", "python"])
def test_unhashable_items_fail_as_a_set_lookup_would(judge: Any) -> None:
    with pytest.raises(TypeError, match="unhashable"):
        judge([[["nested"], "a"]], [["a"]])
    with pytest.raises(TypeError, match="unhashable"):
        judge([["a"]], [[{"k": 1}]])
    with pytest.raises(TypeError, match="unhashable"):  # even where nothing is relevant
        judge([[["nested"]]], [[]])


class Broken:
    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing")


@pytest.mark.parametrize("judge", [judge_exact, _python], ids=["compiled", "python"])
def test_an_error_in_eq_propagates(judge: Any) -> None:
    with pytest.raises(RuntimeError, match="no comparing"):
        judge([[Broken()]], [[Broken()]])


def test_rows_must_pair_up() -> None:
    with pytest.raises(ValueError, match="2 retrieved lists but 1 relevant"):
        judge_exact([["a"], ["b"]], [["a"]])


class Meddler:
    """Changes the lists it sits in while being hashed or compared (a hostile __eq__)."""

    def __init__(self, lists: list[list[Any]]) -> None:
        self.lists = lists

    def __hash__(self) -> int:
        for items in self.lists:
            items.append("grown")
        return 3

    def __eq__(self, other: object) -> bool:
        for items in self.lists:
            items.clear()
        return True


def test_lists_changed_by_eq_or_hash_do_not_crash_the_compiled_judge() -> None:
    for _ in range(50):
        ret: list[Any] = []
        rel: list[Any] = []
        ret.extend([Meddler([ret, rel]), "a", Meddler([ret, rel])])
        rel.extend([Meddler([ret, rel]), "a"])
        outcome: Any
        try:
            outcome = judge_exact([ret], [rel])
        except RuntimeError as error:  # the relevant list grew past the room reserved
            outcome = error
        if isinstance(outcome, RuntimeError):
            assert "changed while judged" in str(outcome)
        else:
            assert outcome.relevant.shape[0] == 1
