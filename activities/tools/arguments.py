"""Check a model's tool arguments against the tool's JSON schema, before the tool runs.

Models get arguments wrong in a few repeatable ways: a missing required key,
a number sent as a string, a key the tool does not have. Each is permanent
(the same arguments fail the same way on every attempt), so it is reported as
:class:`~activities.tools.base.ToolArgumentError` with a message the model can
act on, and never reaches Temporal's retry loop.

Only the subset of JSON Schema the tool schemas use is understood: ``type``
(string, integer, number, boolean, array, object), ``required``,
``additionalProperties: false``, ``enum``, ``minimum``/``maximum``,
``minLength``/``maxLength``, array ``items`` and ``default``. A schema using
anything else is a programming error and is refused when the tool is registered.
"""

from __future__ import annotations

import math
from typing import Any

from activities.tools.base import ToolArgumentError

_KNOWN_KEYWORDS = frozenset({
    "type", "description", "default", "enum", "minimum", "maximum", "minLength", "maxLength", "items",
    "properties", "required", "additionalProperties",
})


def check_schema(schema: dict[str, Any], where: str = "parameters") -> None:
    """Refuse a schema this validator would not enforce completely.

    Args:
        schema: a tool's ``parameters`` schema (or a nested property schema).
        where: the path shown in the error.

    Raises:
        ValueError: an unknown keyword or type.
    """
    unknown = sorted(set(schema) - _KNOWN_KEYWORDS)
    if unknown:
        raise ValueError(f"{where}: unsupported JSON schema keyword(s) {unknown}")
    kind = schema.get("type")
    if kind not in ("string", "integer", "number", "boolean", "array", "object"):
        raise ValueError(f"{where}: unsupported type {kind!r}")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{where}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")


def validate_arguments(schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """The arguments with defaults filled in, or the first problem found.

    Args:
        schema: the tool's ``parameters`` (an object schema).
        arguments: what the model sent.

    Returns:
        A new dict: the given arguments plus the schema's defaults for absent keys.

    Raises:
        ToolArgumentError: a missing required key, an unknown key, a wrong type
            or a value outside its bounds.
    """
    if not isinstance(arguments, dict):
        raise ToolArgumentError(f"arguments must be a JSON object, got {_type_name(arguments)}")
    properties: dict[str, Any] = schema.get("properties", {})
    missing = [key for key in schema.get("required", ()) if key not in arguments]
    if missing:
        raise ToolArgumentError(f"missing required argument(s): {', '.join(missing)}")
    if schema.get("additionalProperties") is False:
        unknown = sorted(key for key in arguments if key not in properties)
        if unknown:
            allowed = ", ".join(properties) or "none"
            raise ToolArgumentError(f"unknown argument(s): {', '.join(unknown)} (allowed: {allowed})")
    out: dict[str, Any] = {}
    for key, sub in properties.items():
        if key in arguments:
            out[key] = _value(sub, arguments[key], key)
        elif "default" in sub:
            # Copy mutable defaults so one call cannot change the next call's default.
            default = sub["default"]
            out[key] = list(default) if isinstance(default, list) else default
    for key, value in arguments.items():
        out.setdefault(key, value)
    return out


def _value(schema: dict[str, Any], value: Any, path: str) -> Any:
    kind = schema["type"]
    if kind == "string":
        if not isinstance(value, str):
            raise ToolArgumentError(f"{path} must be a string, got {_type_name(value)}")
        if len(value) < schema.get("minLength", 0):
            raise ToolArgumentError(f"{path} must not be shorter than {schema['minLength']} character(s)")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ToolArgumentError(f"{path} is {len(value)} characters; the maximum is {schema['maxLength']}")
    elif kind == "integer":
        # JSON has one number type: 3.0 is the integer 3, 3.5 is not an integer.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolArgumentError(f"{path} must be an integer, got {_type_name(value)}")
        _bounds(schema, value, path)
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ToolArgumentError(f"{path} must be a finite number, got {_type_name(value)}")
        _bounds(schema, value, path)
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise ToolArgumentError(f"{path} must be true or false, got {_type_name(value)}")
    elif kind == "array":
        if not isinstance(value, list):
            raise ToolArgumentError(f"{path} must be an array, got {_type_name(value)}")
        items = schema.get("items")
        value = [_value(items, item, f"{path}[{index}]") for index, item in enumerate(value)] if items else list(value)
    elif kind == "object":
        if not isinstance(value, dict):
            raise ToolArgumentError(f"{path} must be an object, got {_type_name(value)}")
        value = validate_arguments(schema, value) if "properties" in schema else dict(value)
    if "enum" in schema and value not in schema["enum"]:
        raise ToolArgumentError(f"{path} must be one of {schema['enum']}, got {value!r}")
    return value


def _bounds(schema: dict[str, Any], value: float, path: str) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        raise ToolArgumentError(f"{path} must be at least {schema['minimum']}, got {value}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ToolArgumentError(f"{path} must be at most {schema['maximum']}, got {value}")


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


__all__ = ["check_schema", "validate_arguments"]
