"""Compact result text: shorter than JSON, and read back into exactly the same document."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from property_examples import examples
from hypothesis import strategies as st

from policy.compact import CompactParseError, compact_text, parse_compact, to_json
from policy.payloads import NumberText, parse_structured


def normalised(value):
    """Numbers compared by their text, everything else as is."""
    if isinstance(value, dict):
        return {key: normalised(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalised(item) for item in value]
    if isinstance(value, NumberText):
        return ("number", str(value))
    return value


def round_trips(raw: str) -> None:
    text = compact_text(raw)
    if text is None:
        return
    data, _ = parse_structured(raw, exact_numbers=True)
    assert normalised(parse_compact(text)) == normalised(data), text
    assert json.loads(to_json(parse_compact(text))) == json.loads(to_json(data))


RESERVATION = json.dumps({
    "reservation_id": "JG7FMM", "user_id": "mia_li_3668", "cabin": "economy", "insurance": "no",
    "flights": [{"origin": "JFK", "destination": "SFO", "flight_number": "HAT028", "date": "2024-05-21",
                 "price": 134.50},
                {"origin": "SFO", "destination": "JFK", "flight_number": "HAT271", "date": "2024-05-25",
                 "price": 110}],
    "passengers": [{"first_name": "Mei", "last_name": "Johansson", "dob": "1981-09-25"}],
    "payment_history": [{"payment_id": "credit_card_4421486", "amount": 244.50}],
})


def test_records_become_a_table_with_their_columns_said_once():
    text = compact_text(RESERVATION)
    assert text == (
        "reservation_id: JG7FMM\nuser_id: mia_li_3668\ncabin: economy\ninsurance: no\n"
        "flights[2]: origin | destination | flight_number | date | price\n"
        "- JFK | SFO | HAT028 | 2024-05-21 | 134.5\n"
        "- SFO | JFK | HAT271 | 2024-05-25 | 110\n"
        "passengers[1]: first_name | last_name | dob\n- Mei | Johansson | 1981-09-25\n"
        "payment_history[1]: payment_id | amount\n- credit_card_4421486 | 244.5"
    )
    assert len(text) < 0.8 * len(RESERVATION)
    round_trips(RESERVATION)


def test_numbers_keep_the_text_the_result_wrote():
    raw = '{"price": 5.50, "big": 1e3, "count": 007, "rows": [{"a": 1.10, "b": -0.0}, {"a": 2.00, "b": 3}]}'
    raw = raw.replace("007", "7")
    text = compact_text(raw)
    assert "price: 5.50" in text and "big: 1e3" in text and "- 1.10 | -0.0" in text and "- 2.00 | 3" in text
    round_trips(raw)


def test_python_literals_and_numpy_reprs_read_the_same_way():
    raw = "[{'id': '0007', 'score': 1.50, 'ok': True, 'note': None}, {'id': '0008', 'score': -2.25, 'ok': False}]"
    text = compact_text(raw)
    assert text == "[2]: id | score | ok | note\n- 0007 | 1.50 | true | null\n- 0008 | -2.25 | false"
    round_trips(raw)
    round_trips("array(['a@b.com', 'c@d.com', 'e@f.com', 'g@h.com'], dtype=object)")


def test_nested_records_are_flattened_into_dotted_columns():
    flights = [[{"flight_number": f"HAT{i}{j}", "available_seats": {"economy": i, "business": j},
                 "prices": {"economy": 100 + i}} for j in range(2)] for i in range(3)]
    raw = json.dumps(flights)
    text = compact_text(raw)
    assert text.splitlines()[0] == ("[3/6]: flight_number | available_seats.economy | available_seats.business "
                                    "| prices.economy")
    assert text.splitlines()[1:3] == ["- HAT00 | 0 | 0 | 100", "+ HAT01 | 0 | 1 | 100"]
    round_trips(raw)


TRICKY = [
    ("strings that read as other types", {"a": "null", "b": "true", "c": "12", "d": "", "e": " pad ", "f": "-x"}),
    ("separators inside values", {"rows": [{"a": "x | y", "b": "p, q"}, {"a": "[z]", "b": "{w}"}]}),
    ("line breaks", {"body": "line one\nline two", "rows": [{"t": "a\nb"}, {"t": "c"}]}),
    ("odd keys", {"a.b": 1, "key: x": 2, " sp": 3, "": 4, "a[1]": 5, "-": 6, '"q"': 7}),
    ("missing and empty cells", {"rows": [{"a": 1, "b": ""}, {"b": 2}, {"a": [], "c": {}}]}),
    ("lists in cells", {"rows": [{"tags": ["a", "b, c"], "n": 1}, {"tags": [], "n": 2}]}),
    ("a column that is sometimes a record", {"rows": [{"p": {"x": 1}}, {"p": 3}]}),
    ("lists of lists", {"m": [[1, 2], [3, "4"]], "e": [[], {}]}),
    ("deep nesting", {"a": {"b": {"c": [{"d": [{"e": 1}, {"e": 2}]}, {"d": 2}]}}}),
    ("unicode", {"name": "Zoë Ångström", "rows": [{"c": "東京"}, {"c": "—"}]}),
]


@pytest.mark.parametrize("document", [row[1] for row in TRICKY], ids=[row[0] for row in TRICKY])
def test_tricky_documents_round_trip(document):
    raw = json.dumps(document, indent=2)  # indented, so the compact text is always the shorter one
    assert compact_text(raw) is not None
    round_trips(raw)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12), st.sampled_from(["null", "-", "a | b", "x, y", "[1]", "{}", "", " s", "k: v", "\n"]),
)
keys = st.one_of(st.text(max_size=8), st.sampled_from(["id", "a.b", "x: y", "p[0]", "-", "q|r"]))
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(keys, inner, max_size=5),
                            st.lists(st.dictionaries(st.sampled_from(["id", "name", "n", "tags"]), inner,
                                                     min_size=1, max_size=4), min_size=1, max_size=4)),
    max_leaves=30,
)


@settings(max_examples=examples(400), deadline=None)
@given(documents)
def test_any_document_round_trips(document):
    round_trips(json.dumps(document, indent=2))


@pytest.mark.parametrize("raw", ["plain text", "a,b\n1,2", "42", '"just a string"', "[]", "{}", "[1,2,3]"])
def test_what_is_not_worth_it_stays_raw(raw):
    assert compact_text(raw) is None


@pytest.mark.parametrize("text", ["rows[3]: a | b\n- 1 | 2", "a: 1\n  b: 2", "no separator here", "[x, y"])
def test_text_it_did_not_write_is_refused(text):
    with pytest.raises(CompactParseError):
        parse_compact(text)
