"""The keys that pair two runs' rows (``store.pairing``): the many-rows form gives each row
the key the one-row form does (Hypothesis over ids and query texts, lone surrogates and
integers past 64 bits included), within the signed 64-bit range the store's columns hold."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ragmeter.store.pairing import key_hash, keys_of, row_keys

_ids = st.one_of(
    st.none(),
    st.booleans(),  # not an id
    st.floats(allow_nan=False),  # not an id
    st.integers(),
    st.integers(min_value=2**64, max_value=2**80),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1),
)


@given(st.lists(st.tuples(st.text(), _ids), max_size=40))
def test_many_rows_get_the_keys_each_row_gets(rows: list[tuple[str, Any]]) -> None:
    queries = [query for query, _ in rows]
    ids = [found for _, found in rows]
    id_keys, query_keys = keys_of(queries, ids)
    expected = [row_keys(query, {} if found is None else {"id": found}) for query, found in rows]
    assert [k or None for k in id_keys.tolist()] == [i for i, _ in expected]
    assert query_keys.tolist() == [q for _, q in expected]
    assert all(-(2**63) <= k < 2**63 for k in id_keys.tolist() + query_keys.tolist())


def test_a_key_is_signed_and_tells_an_id_s_type() -> None:
    keys = [key_hash(str(i)) for i in range(2000)]
    assert min(keys) < 0 < max(keys)  # the upper half of the hashes is stored as negatives
    assert row_keys("q", {"id": "1"})[0] != row_keys("q", {"id": 1})[0]
    assert row_keys("q", {"id": True})[0] is None and row_keys("q", {})[0] is None
    assert row_keys("q", {"id": 1})[1] == key_hash("q")
