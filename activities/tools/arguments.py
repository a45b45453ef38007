"""Check a model's tool arguments against the tool's JSON schema, before the tool runs.

Validation is :mod:`jsonschema`'s (Draft 2020-12, with its ``FormatChecker``),
so a tool's schema may use the whole vocabulary: ``$ref``/``$defs``,
``anyOf``/``oneOf``/``allOf``, ``pattern``, ``format``, nested objects and
arrays. What this module adds around it:

* :func:`check_schema` refuses, when a tool is registered, a schema that is not
  valid JSON Schema or that refers to another document (``$ref`` to a URL: the
  worker never fetches schemas), as :class:`~activities.tools.base.ToolSchemaError`.
* :func:`validate_arguments` reports the most relevant problem as
  :class:`~activities.tools.base.ToolArgumentError`, phrased for the model and
  naming the argument's path (``options.depth``, ``tags[1]``); refuses numbers
  that are not finite (JSON has none, Python's parser accepts ``NaN``); turns an
  integral float into an ``int`` where the schema asks for an integer; and fills
  in the defaults of absent properties.

Models get arguments wrong in a few repeatable ways: a missing required key,
a number sent as a string, a key the tool does not have. Each is permanent
(the same arguments fail the same way on every attempt), so it never reaches
Temporal's retry loop.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from referencing.exceptions import Unresolvable

from activities.tools.base import ToolArgumentError, ToolSchemaError

_VALIDATOR = Draft202012Validator
"""The JSON Schema dialect tool schemas are written in (what OpenAI and Anthropic accept)."""

_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a finite number",
               "boolean": "true or false", "array": "an array", "object": "an object", "null": "null"}


def check_schema(schema: dict[str, Any], where: str = "parameters") -> None:
    """Refuse a schema that is not valid JSON Schema, or that refers outside itself.

    Args:
        schema: a tool's ``parameters`` schema.
        where: the name shown in the error (``files.write.parameters``).

    Raises:
        ToolSchemaError: the schema is invalid (the message names the offending keyword's path),
            or holds a ``$ref`` to another document.
    """
    if not isinstance(schema, dict):
        raise ToolSchemaError(f"{where}: a schema is a JSON object, not {_type_name(schema)}")
    try:
        _VALIDATOR.check_schema(schema)
    except SchemaError as error:
        at = "".join(_segment(part) for part in error.path) or ""
        raise ToolSchemaError(f"{where}{at}: invalid JSON schema: {error.message}") from error
    for path, ref in _refs(schema, ""):
        if not ref.startswith("#"):
            raise ToolSchemaError(f"{where}{path}: $ref {ref!r} points outside the schema; use $defs and '#/$defs/...'")


def validate_arguments(schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """The arguments with defaults filled in, or the most relevant problem found.

    Args:
        schema: the tool's ``parameters`` (an object schema, already accepted by :func:`check_schema`).
        arguments: what the model sent.

    Returns:
        A new dict: the given arguments (integral floats as ints where the schema says
        ``integer``) plus the schema's defaults for absent properties.

    Raises:
        ToolArgumentError: the arguments do not fit the schema; the message names the argument's path.
    """
    if not isinstance(arguments, dict):
        raise ToolArgumentError(f"arguments must be a JSON object, got {_type_name(arguments)}")
    _refuse_non_finite(arguments, "")
    validator = _VALIDATOR(schema, format_checker=_VALIDATOR.FORMAT_CHECKER)
    try:
        error = best_match(validator.iter_errors(arguments))
    except Unresolvable as unresolvable:  # check_schema lets only local refs through; a typo in one lands here
        raise ToolArgumentError(f"the tool's schema has an unresolvable $ref: {unresolvable}") from unresolvable
    if error is not None:
        raise ToolArgumentError(_message(error)) from error
    return _complete(schema, schema, copy.deepcopy(arguments))


# --------------------------------------------------------------------------- messages


def _message(error: ValidationError) -> str:
    """One error, phrased for the model, naming where it is."""
    path = "".join(_segment(part) for part in error.absolute_path).lstrip(".")
    name = path or "arguments"
    keyword, expected, value = error.validator, error.validator_value, error.instance
    prefix = f"{path}: " if path else ""
    if keyword == "required":
        missing = [key for key in expected if isinstance(value, dict) and key not in value]
        return f"{prefix}missing required argument(s): {', '.join(missing)}"
    if keyword == "additionalProperties" and expected is False:
        known = list(error.schema.get("properties", {}))
        unknown = sorted(key for key in value if key not in known and not _matches_pattern(error.schema, key))
        return f"{prefix}unknown argument(s): {', '.join(unknown)} (allowed: {', '.join(known) or 'none'})"
    if keyword == "type":
        kinds = [expected] if isinstance(expected, str) else list(expected)
        return f"{name} must be {' or '.join(_TYPE_WORDS.get(kind, kind) for kind in kinds)}, got {_type_name(value)}"
    if keyword == "minLength":
        return f"{name} must not be shorter than {expected} character(s)"
    if keyword == "maxLength":
        return f"{name} is {len(value)} characters; the maximum is {expected}"
    if keyword == "minimum":
        return f"{name} must be at least {expected}, got {value}"
    if keyword == "maximum":
        return f"{name} must be at most {expected}, got {value}"
    if keyword == "enum":
        return f"{name} must be one of {expected}, got {value!r}"
    if keyword == "pattern":
        return f"{name} must match the pattern {expected!r}, got {value!r}"
    if keyword == "format":
        return f"{name} must be a valid {expected}, got {value!r}"
    if keyword in ("anyOf", "oneOf"):
        return f"{name} fits none of the allowed forms ({error.message})"
    return f"{name}: {error.message}"


def _segment(part: str | int) -> str:
    return f"[{part}]" if isinstance(part, int) else f".{part}"


def _matches_pattern(schema: dict[str, Any], key: str) -> bool:
    return any(re.search(pattern, key) for pattern in schema.get("patternProperties", {}))


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _refuse_non_finite(value: Any, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolArgumentError(f"{path.lstrip('.') or 'arguments'} must be a finite number, got {value}")
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_non_finite(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_non_finite(item, f"{path}[{index}]")


def _refs(schema: Any, path: str) -> list[tuple[str, str]]:
    """``(path, $ref)`` of every reference in a schema."""
    found: list[tuple[str, str]] = []
    if isinstance(schema, dict):
        for key, sub in schema.items():
            if key == "$ref" and isinstance(sub, str):
                found.append((path, sub))
            elif key not in ("enum", "const", "default", "examples"):
                found += _refs(sub, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, sub in enumerate(schema):
            found += _refs(sub, f"{path}[{index}]")
    return found


# --------------------------------------------------------------------------- completion


def _resolve(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Follow local ``$ref`` chains (``#/$defs/X``) to the schema they name."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/") and seen < 32:
        target: Any = root
        for part in schema["$ref"][2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(target, dict) else {}
        schema, seen = target if isinstance(target, dict) else {}, seen + 1
    return schema


def _complete(root: dict[str, Any], schema: dict[str, Any], value: Any) -> Any:
    """``value`` (already valid) with integral floats as ints and object defaults filled in."""
    schema = _resolve(root, schema)
    kinds = schema.get("type")
    if isinstance(value, float) and value.is_integer() and (kinds == "integer" or (
            isinstance(kinds, list) and "integer" in kinds and "number" not in kinds)):
        return int(value)
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        for key, sub in properties.items():
            if key in value:
                value[key] = _complete(root, sub, value[key])
            elif isinstance(sub, dict) and ("default" in sub or "default" in _resolve(root, sub)):
                # Copy mutable defaults so one call cannot change the next call's default.
                value[key] = copy.deepcopy(sub["default"] if "default" in sub else _resolve(root, sub)["default"])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [_complete(root, schema["items"], item) for item in value]
    return value


__all__ = ["check_schema", "validate_arguments"]
