"""The input checks every client entry point runs before it writes (issue 11, class 6)."""

from __future__ import annotations

import uuid

import pytest

from dossier.cli import ERROR_LINE_MAX, error_line
from dossier.client import InvalidInputError, check_id, check_text


@pytest.mark.parametrize(("text", "says"), [
    ("", "blank"),
    (" \n\t\u3000", "blank"),
    ("a\x00b", "NUL"),
    ("bad \udcff", "UTF-8"),
    ("\ud800", "UTF-8"),
    ("é" * 6, "over the limit of 10"),
    (b"bytes", "must be text"),
    (None, "must be text"),
])
def test_check_text_refuses(text: object, says: str) -> None:
    with pytest.raises(InvalidInputError, match=says):
        check_text(text, max_bytes=10)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["hi", "é" * 5, " padded ", "t\tand\nn", "ok 👍"])
def test_check_text_keeps_good_text_unchanged(text: str) -> None:
    assert check_text(text, max_bytes=10) is text


def test_check_id_normalises_and_refuses() -> None:
    value = uuid.uuid4()
    assert check_id(str(value).upper(), "conversation") == str(value)
    assert check_id(None, "branch") is None
    for bad in ("not-a-uuid", "", "x" * 500, "\x00", str(value) + "0"):
        with pytest.raises(InvalidInputError, match="not a valid id") as error:
            check_id(bad, "conversation")
        assert len(str(error.value)) < 150


def test_error_line_is_one_line_and_bounded() -> None:
    assert error_line(ValueError("a\n\n  b\n")) == "a | b"
    assert error_line(KeyError()) == "KeyError"
    long = error_line("x" * (ERROR_LINE_MAX * 2))
    assert "\n" not in long and long.endswith("(-v shows the whole message)")
