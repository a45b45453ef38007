"""Argument validation: JSON Schema (Draft 2020-12) through jsonschema, with messages that name the argument."""

from __future__ import annotations

import re

import pytest

from activities.tools.arguments import check_schema, validate_arguments
from activities.tools.base import ToolArgumentError, ToolSchemaError

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


def test_check_schema_accepts_valid_schemas_and_refuses_invalid_ones():
    check_schema(SCHEMA)
    check_schema({"type": "object", "properties": {"x": {"type": "null"}}, "oneOf": [{"required": ["x"]}]})
    with pytest.raises(ToolSchemaError, match=r"invalid JSON schema: 'nothing' is not valid"):
        check_schema({"type": "object", "properties": {"x": {"type": "nothing"}}})
    with pytest.raises(ToolSchemaError, match="invalid JSON schema"):
        check_schema({"type": "object", "required": "x"})
    with pytest.raises(ToolSchemaError, match="points outside the schema"):
        check_schema({"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}})
    assert issubclass(ToolSchemaError, ValueError)


RICH = {
    "type": "object",
    "$defs": {
        "point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
                  "required": ["x"], "additionalProperties": False},
    },
    "properties": {
        "origin": {"$ref": "#/$defs/point"},
        "target": {"anyOf": [{"$ref": "#/$defs/point"}, {"type": "string", "pattern": "^[A-Z][0-9]$"}]},
        "code": {"type": "string", "pattern": "^[a-z]{3}-[0-9]+$"},
        "when": {"type": "string", "format": "date"},
        "filter": {
            "type": "object",
            "properties": {"region": {"type": "object", "properties": {"name": {"type": "string", "minLength": 2}},
                                      "required": ["name"]},
                           "limit": {"type": "integer", "default": 10}},
        },
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    },
    "additionalProperties": False,
}


def test_ref_is_followed_and_its_defaults_filled_in():
    check_schema(RICH)
    out = validate_arguments(RICH, {"origin": {"x": 2.0}})
    assert out == {"origin": {"x": 2, "y": 0}, "maybe": None}
    assert type(out["origin"]["x"]) is int
    with pytest.raises(ToolArgumentError, match=r"origin\.x must be an integer, got a string"):
        validate_arguments(RICH, {"origin": {"x": "2"}})
    with pytest.raises(ToolArgumentError, match=r"origin: unknown argument\(s\): z \(allowed: x, y\)"):
        validate_arguments(RICH, {"origin": {"x": 1, "z": 1}})


def test_any_of_accepts_either_form_and_names_the_argument_otherwise():
    validate_arguments(RICH, {"target": {"x": 1}})
    validate_arguments(RICH, {"target": "B7"})
    validate_arguments(RICH, {"maybe": None})
    with pytest.raises(ToolArgumentError, match="^target"):
        validate_arguments(RICH, {"target": "b77"})


def test_pattern_and_format():
    validate_arguments(RICH, {"code": "abc-12", "when": "2026-03-01"})
    pattern = re.escape("code must match the pattern '^[a-z]{3}-[0-9]+$', got 'ab-1'")
    with pytest.raises(ToolArgumentError, match=pattern):
        validate_arguments(RICH, {"code": "ab-1"})
    with pytest.raises(ToolArgumentError, match="when must be a valid date, got '2026-13-45'"):
        validate_arguments(RICH, {"when": "2026-13-45"})


def test_nested_objects_are_checked_and_completed_at_every_depth():
    out = validate_arguments(RICH, {"filter": {"region": {"name": "north"}}})
    assert out["filter"] == {"region": {"name": "north"}, "limit": 10}
    with pytest.raises(ToolArgumentError, match=r"filter\.region: missing required argument\(s\): name"):
        validate_arguments(RICH, {"filter": {"region": {}}})
    with pytest.raises(ToolArgumentError, match=r"filter\.region\.name must not be shorter than 2"):
        validate_arguments(RICH, {"filter": {"region": {"name": "n"}}})
    with pytest.raises(ToolArgumentError, match=r"^filter\.region\.name must be a finite number, got inf$"):
        validate_arguments(RICH, {"filter": {"region": {"name": float("inf")}}})
