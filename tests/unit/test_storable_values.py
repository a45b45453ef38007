"""The fixed forms the store's column types write for what Postgres cannot hold (store.models.types)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from store.models.types import storable_json, storable_text

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def _storable(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" not in value
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_storable(k) and _storable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_storable(v) for v in value)
    return True


def test_nul_becomes_the_replacement_character_everywhere() -> None:
    assert storable_text("a\x00b\x00") == "a\ufffdb\ufffd"
    assert storable_json({"k\x00": ["v\x00", {"x": "\x00"}]}) == {"k\ufffd": ["v\ufffd", {"x": "\ufffd"}]}


def test_non_finite_numbers_are_spelled_as_strings() -> None:
    assert storable_json([math.nan, math.inf, -math.inf, 1.5]) == ["NaN", "Infinity", "-Infinity", 1.5]


def test_a_clean_value_is_returned_as_is() -> None:
    value = {"a": [1, 2.5, "x", None, {"b": True}]}
    assert storable_json(value) is value
    text = "plain"
    assert storable_text(text) is text


@given(json_values)
def test_every_json_value_becomes_storable_and_clean_parts_are_kept(value: object) -> None:
    stored = storable_json(value)
    assert _storable(stored)
    assert storable_json(stored) == stored  # a second pass changes nothing
    if _storable(value):
        assert stored is value
