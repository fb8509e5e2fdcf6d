"""The exact judge (binary and graded) against a naive reference, and its errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.metrics.retrieval._judge import NOT_JUDGED, judge_exact


def _naive(ret: list[Any], rel: Any) -> list[int]:
    """Each retrieved item's grade: its first occurrence takes the judged grade (1 for plain
    ids), a repeat or an unjudged item NOT_JUDGED."""
    grades = dict(rel) if isinstance(rel, dict) else dict.fromkeys(rel, 1)
    seen: set[Any] = set()
    out = []
    for item in ret:
        out.append(grades[item] if item in grades and item not in seen else NOT_JUDGED)
        if item in grades:
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


# ids that are equal but not identical objects (joined at draw time), ints equal to floats,
# and objects whose hashes all collide
items = st.one_of(
    st.integers(0, 15).map(lambda i: "".join(["d", str(i)])),
    st.integers(0, 4),
    st.integers(0, 4).map(float),
    st.integers(0, 3).map(Clash),
)
judged = st.one_of(
    st.lists(items, max_size=40),
    st.dictionaries(items, st.integers(-2, 4), max_size=20),
)


@given(st.lists(st.lists(items, max_size=30), max_size=8), st.data())
@settings(max_examples=400, deadline=None)
def test_grades_equal_the_naive_reference(retrieved: list[list[Any]], data: st.DataObject) -> None:
    relevant = [data.draw(judged) for _ in retrieved]
    got = judge_exact(retrieved, relevant)
    assert got.n_retrieved.tolist() == [len(r) for r in retrieved]
    for row, (ret, rel) in enumerate(zip(retrieved, relevant, strict=True)):
        assert got.grades[row, : len(ret)].tolist() == _naive(ret, rel)
        assert (got.grades[row, len(ret) :] == NOT_JUDGED).all()
        grades = dict(rel) if isinstance(rel, dict) else dict.fromkeys(rel, 1)
        mine = got.judged_grades[got.judged_rows == row]
        assert sorted(mine.tolist()) == sorted(grades.values())
        for level in (1, 2, 3):
            assert got.n_relevant(level)[row] == sum(g >= level for g in grades.values())
        assert got.n_nonrelevant(2)[row] == sum(0 <= g < 2 for g in grades.values())


def test_a_large_relevant_set_then_small_rows() -> None:
    many = [f"d{i}" for i in range(5000)]
    retrieved = [many[::-1][:50], ["d1", "x", "d1"], ["y", "d4999"], []]
    relevant = [many, ["d1"], ["d4999", "d4999"], ["z"]]
    got = judge_exact(retrieved, relevant)
    assert got.relevant()[0].all()
    assert got.relevant()[1].tolist()[:3] == [True, False, False]
    assert got.relevant()[2].tolist()[:2] == [False, True]
    assert not got.relevant()[3].any()
    assert got.n_relevant().tolist() == [5000, 1, 1, 1]


def test_sets_tuples_frozensets_and_mappings_are_accepted() -> None:
    got = judge_exact(
        [("a", "b"), ["c"], ["e", "f", "g"]],
        [{"b"}, frozenset({"c", "d"}), {"e": 0, "f": 2, "h": 3, "i": -1}],
    )
    assert got.relevant().tolist() == [
        [False, True, False],
        [True, False, False],
        [False, True, False],
    ]
    assert got.grades[2].tolist() == [0, 2, NOT_JUDGED]
    assert got.n_relevant().tolist() == [1, 2, 2]
    assert got.n_relevant(3).tolist() == [0, 0, 1]
    assert got.n_nonrelevant().tolist() == [0, 0, 1]


def test_judged_only_drops_what_the_row_does_not_judge_and_moves_the_rest_up() -> None:
    got = judge_exact([["x", "a", "y", "b", "c"]], [{"a": 1, "b": 0, "c": -1}]).judged_only()
    assert got.grades[0].tolist() == [1, 0]
    assert got.n_retrieved.tolist() == [2]


def test_cut_keeps_the_first_k_and_every_judgement() -> None:
    got = judge_exact([["a", "b", "c"], ["c"]], [["b", "c"], ["c"]]).cut(1)
    assert got.grades.shape == (2, 1)
    assert got.n_retrieved.tolist() == [1, 1]
    assert got.n_relevant().tolist() == [2, 1]


def test_a_grade_that_is_not_a_whole_number_is_refused() -> None:
    with pytest.raises(ValueError, match="whole number"):
        judge_exact([["a"]], [{"a": 1.5}])
    with pytest.raises(ValueError, match="whole number"):
        judge_exact([["a"]], [{"a": True}])
    assert judge_exact([["a"]], [{"a": 2.0}]).grades[0, 0] == 2


def test_unhashable_items_fail_as_a_set_lookup_would() -> None:
    with pytest.raises(TypeError, match="unhashable"):
        judge_exact([[["nested"], "a"]], [["a"]])
    with pytest.raises(TypeError, match="unhashable"):
        judge_exact([["a"]], [[{"k": 1}]])
    with pytest.raises(TypeError, match="unhashable"):  # even where nothing is relevant
        judge_exact([[["nested"]]], [[]])


class Broken:
    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing")


def test_an_error_in_eq_propagates() -> None:
    with pytest.raises(RuntimeError, match="no comparing"):
        judge_exact([[Broken()]], [[Broken()]])


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


def test_lists_changed_by_eq_or_hash_give_a_result_or_a_python_error() -> None:
    """The judge is Python: a hostile key cannot make it read freed memory; the outcome is
    a judgement of one row or an ordinary exception."""
    for _ in range(50):
        ret: list[Any] = []
        rel: list[Any] = []
        ret.extend([Meddler([ret, rel]), "a", Meddler([ret, rel])])
        rel.extend([Meddler([ret, rel]), "a"])
        try:
            outcome = judge_exact([ret], [rel])
        except (ValueError, IndexError, KeyError):
            continue  # e.g. list.index of an item the meddler removed
        assert outcome.grades.shape[0] == 1


@given(
    st.lists(st.lists(items, max_size=20), min_size=1, max_size=6),
    st.data(),
    st.lists(st.tuples(st.one_of(st.none(), st.integers(1, 25)), st.integers(1, 4)), max_size=8),
)
@settings(max_examples=200, deadline=None)
def test_cut_views_share_the_relevance_masks_without_changing_them(
    retrieved: list[list[Any]], data: st.DataObject, asks: list[tuple[int | None, int]]
) -> None:
    """Masks made once per level and shared by every cut view, in whatever order asked."""
    relevant = [data.draw(judged) for _ in retrieved]
    judgements = judge_exact(retrieved, relevant)
    for k, level in asks:
        view = judgements.cut(k)
        assert view.relevant(level).tolist() == (view.grades >= level).tolist()
        again = judgements.relevant(level)
        assert again.tolist() == (judgements.grades >= level).tolist()
