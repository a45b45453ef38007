"""Argument validation: the JSON-schema subset the tool schemas use."""

from __future__ import annotations

import pytest

from activities.tools.arguments import check_schema, validate_arguments
from activities.tools.base import ToolArgumentError

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 20},
        "count": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
        "ratio": {"type": "number"},
        "strict": {"type": "boolean", "default": False},
        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        "mode": {"type": "string", "enum": ["fast", "exact"]},
        "options": {"type": "object", "properties": {"depth": {"type": "integer"}}, "required": ["depth"]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def test_valid_arguments_get_their_defaults():
    assert validate_arguments(SCHEMA, {"path": "a.csv"}) == {"path": "a.csv", "count": 2, "strict": False, "tags": []}


def test_integral_floats_are_integers():
    assert validate_arguments(SCHEMA, {"path": "a", "count": 3.0})["count"] == 3


def test_mutable_defaults_are_not_shared():
    first = validate_arguments(SCHEMA, {"path": "a"})
    first["tags"].append("changed")
    assert validate_arguments(SCHEMA, {"path": "a"})["tags"] == []


def test_the_input_is_not_modified():
    given = {"path": "a"}
    validate_arguments(SCHEMA, given)
    assert given == {"path": "a"}


@pytest.mark.parametrize(("arguments", "message"), [
    ({}, "missing required argument\\(s\\): path"),
    ({"path": "a", "extra": 1}, "unknown argument\\(s\\): extra"),
    ({"path": ""}, "path must not be shorter than 1"),
    ({"path": "x" * 21}, "path is 21 characters; the maximum is 20"),
    ({"path": "a", "count": 0}, "count must be at least 1"),
    ({"path": "a", "count": 6}, "count must be at most 5"),
    ({"path": "a", "ratio": float("nan")}, "ratio must be a finite number"),
    ({"path": "a", "ratio": True}, "ratio must be a finite number"),
    ({"path": "a", "strict": "yes"}, "strict must be true or false"),
    ({"path": "a", "tags": "csv"}, "tags must be an array"),
    ({"path": "a", "tags": ["csv", 3]}, "tags\\[1\\] must be a string"),
    ({"path": "a", "mode": "slow"}, "mode must be one of"),
    ({"path": "a", "options": []}, "options must be an object"),
    ({"path": "a", "options": {}}, "missing required argument\\(s\\): depth"),
    (None, "arguments must be a JSON object, got null"),
])
def test_bad_arguments(arguments, message):
    with pytest.raises(ToolArgumentError, match=message):
        validate_arguments(SCHEMA, arguments)


def test_check_schema_accepts_the_subset_and_refuses_the_rest():
    check_schema(SCHEMA)
    with pytest.raises(ValueError, match="unsupported type 'null'"):
        check_schema({"type": "object", "properties": {"x": {"type": "null"}}})
    with pytest.raises(ValueError, match="oneOf"):
        check_schema({"type": "object", "oneOf": []})
