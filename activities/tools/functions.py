"""Python functions as tools: a typed ``async def`` becomes a :class:`RegisteredTool`.

:func:`function_tool` reads everything the runtime needs from the function:

* the name: given, or ``<module>.<function>`` (the module-qualified name);
* the description: the docstring's text before its ``Args:``/``Returns:``/``Raises:`` sections;
* the argument schema: JSON Schema derived from the type hints by pydantic
  (``str``/``int``/``float``/``bool``, ``Literal``, ``list[...]``, ``dict``,
  ``Optional``, pydantic models as nested objects); a parameter with a default is
  not required, and no other argument is accepted. A parameter's line under
  ``Args:`` in the docstring becomes its description;
* a parameter annotated :class:`~activities.tools.base.ToolContext` receives the
  call's context and is not offered to the model.

The function runs like a built-in tool, inside ``execute_tool``: its arguments
are checked against the schema first, then parsed by pydantic (a model-typed
parameter receives an instance), and what it returns becomes the
:class:`ToolResult` whose bytes are captured as the call's artifact
(:func:`to_result`). The policy metadata (privacy, freshness, retries...) are
the keyword arguments of :func:`function_tool`.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from types import ModuleType
from typing import Any

import pydantic
import pydantic_core

from activities.tools.base import RegisteredTool, ToolArgumentError, ToolContext, ToolResult
from policy.enums import FreshnessClass, PrivacyClass
from policy.retention import RetentionSpec
from policy.tools import ResultKind, ToolSpec

MARK = "__dossier_tool__"
"""The attribute a decorated function carries its :class:`RegisteredTool` under."""

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Yields|Raises|Examples?|Notes?):\s*$")


def function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    privacy: PrivacyClass | str = PrivacyClass.USER,
    freshness: FreshnessClass | str = FreshnessClass.SESSION,
    stale_after: timedelta | float | None = None,
    revalidate_with: str | Iterable[str] = (),
    key_args: Iterable[str] | None = None,
    retry_critical: bool = False,
    summary_fields: Iterable[str] = (),
    summary_chars: int | None = None,
    result_kind: ResultKind = "auto",
    version: str = "1",
    deferred: bool = False,
    max_attempts: int = 3,
    timeout_seconds: float = 60.0,
    heartbeat_seconds: float | None = None,
    retention: RetentionSpec | Mapping[str, Any] | None = None,
) -> RegisteredTool:
    """The tool an ``async def`` describes.

    Args:
        fn: the coroutine function (for a deferred tool, only its signature and docstring are used).
        name: the canonical (dotted) name; default ``<module>.<function>``.
        description: what the model is told; default the docstring's summary.
        privacy: the privacy class of its calls and results.
        stale_after: how long a result stays fresh (a ``timedelta`` or seconds): the spec's ``ttl``.
        revalidate_with: tools that refresh a stale result (default: the tool itself).
        key_args: arguments that identify the subject (default: all).
        retry_critical: a failure must stay visible verbatim until resolved.
        summary_fields: result fields a summary shows first.
        summary_chars: character budget of its summaries.
        result_kind: how to read a result (``auto`` sniffs).
        deferred: answered by a human, never executed.
        max_attempts: Temporal attempts before the call fails for good.
        timeout_seconds: start-to-close timeout of one attempt.
        heartbeat_seconds: heartbeat timeout for long tools.
        retention: how long its artifacts and memories are kept (:class:`~policy.retention.RetentionSpec`,
            or a mapping like ``{"artifacts": {"kind": "delete", "after_days": 30}}``; default: keep).

    Returns:
        The registered tool (give it to a :class:`~activities.tools.registry.ToolRegistry`).

    Raises:
        TypeError: not a coroutine function, ``*args``/``**kwargs``, or a type pydantic cannot describe.
        ValueError: bad metadata (an unknown privacy or freshness class, ``max_attempts < 1``...).
    """
    if not deferred and not inspect.iscoroutinefunction(fn):
        raise TypeError(f"{_qualified(fn)}: a tool is an async def")
    model, context_parameter = arguments_model(fn)
    schema = _strip_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    doc = inspect.getdoc(fn) or ""
    for parameter, text in _argument_docs(doc).items():
        prop = schema["properties"].get(parameter)
        if isinstance(prop, dict) and "description" not in prop:
            prop["description"] = text
    ttl = timedelta(seconds=stale_after) if isinstance(stale_after, (int, float)) else stale_after
    spec = ToolSpec(
        name=name or _qualified(fn), version=version, result_kind=result_kind, privacy=PrivacyClass(privacy),
        freshness=FreshnessClass(freshness), ttl=ttl,
        revalidate_with=(revalidate_with,) if isinstance(revalidate_with, str) else tuple(revalidate_with),
        key_args=tuple(key_args) if key_args is not None else None, retry_critical=retry_critical,
        summary_fields=tuple(summary_fields), summary_chars=summary_chars,
        retention=RetentionSpec.model_validate(retention) if retention is not None else None,
    )
    run = None if deferred else _runner(fn, model, context_parameter)
    return RegisteredTool(spec=spec, description=description or _summary(doc) or spec.name, parameters=schema,
                          run=run, deferred=deferred, max_attempts=max_attempts, timeout_seconds=timeout_seconds,
                          heartbeat_seconds=heartbeat_seconds)


def arguments_model(fn: Callable[..., Any]) -> tuple[type[pydantic.BaseModel], str | None]:
    """A pydantic model of ``fn``'s parameters, and the name of its context parameter (if any)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as error:  # an unresolvable forward reference: say which function
        raise TypeError(f"{_qualified(fn)}: cannot read its type hints: {error}") from error
    fields: dict[str, Any] = {}
    context_parameter = None
    for parameter in inspect.signature(fn).parameters.values():
        annotation = hints.get(parameter.name, Any)
        if annotation is ToolContext:
            context_parameter = parameter.name
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY):
            raise TypeError(f"{_qualified(fn)}: parameter {parameter.name!r} cannot be passed by name")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    try:
        model = pydantic.create_model(f"{fn.__name__}_arguments", __config__=pydantic.ConfigDict(extra="forbid"),
                                      **fields)
        model.model_json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as error:
        raise TypeError(f"{_qualified(fn)}: its parameters cannot be described as JSON Schema: {error}") from error
    return model, context_parameter


def to_result(value: Any) -> ToolResult:
    """What a function tool returned, as the bytes captured for the call.

    A :class:`ToolResult` passes through; ``bytes`` are ``application/octet-stream``;
    ``str`` is ``text/plain``; anything else (dicts, lists, numbers, pydantic models,
    dates) is JSON.
    """
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, (bytes, bytearray)):
        return ToolResult(payload=bytes(value), content_type="application/octet-stream")
    if isinstance(value, str):
        return ToolResult(payload=value.encode(), content_type="text/plain; charset=utf-8")
    return ToolResult(payload=pydantic_core.to_json(value), content_type="application/json")


def tools_in(module: ModuleType) -> list[RegisteredTool]:
    """The decorated tools a module holds (by attribute), in name order, each once."""
    found = {id(tool): tool for value in vars(module).values() if isinstance(tool := getattr(value, MARK, None),
                                                                             RegisteredTool)}
    return sorted(found.values(), key=lambda tool: tool.name)


def _runner(fn: Callable[..., Any], model: type[pydantic.BaseModel], context_parameter: str | None):
    async def run(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        try:
            parsed = model.model_validate(arguments)
        except pydantic.ValidationError as error:  # the schema check passed: a constraint only pydantic knows
            raise ToolArgumentError(f"invalid arguments: {error}") from error
        kwargs = {field: getattr(parsed, field) for field in type(parsed).model_fields}
        if context_parameter is not None:
            kwargs[context_parameter] = context
        return to_result(await fn(**kwargs))

    return run


def _qualified(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__name__}"


def _summary(doc: str) -> str:
    lines: list[str] = []
    for line in doc.splitlines():
        if _SECTION.match(line):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def _argument_docs(doc: str) -> dict[str, str]:
    """``name: text`` entries of a Google-style ``Args:`` section (deeper-indented continuation lines joined)."""
    found: dict[str, str] = {}
    inside, current, indent = False, None, None
    for line in doc.splitlines():
        if _SECTION.match(line):
            inside, current, indent = line.strip()[:-1] in ("Args", "Arguments", "Parameters"), None, None
            continue
        if not inside or not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        entry = re.match(r"^\s*(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if entry and (indent is None or depth <= indent):
            current, indent = entry.group(1), depth
            found[current] = entry.group(2).strip()
        elif current is not None:
            found[current] = f"{found[current]} {line.strip()}".strip()
    return found


def _strip_titles(schema: Any) -> Any:
    """Pydantic's ``title`` keywords, which only repeat the names, removed (property names kept)."""
    if isinstance(schema, dict):
        return {key: (_strip_titles_in(value) if key in ("properties", "$defs", "patternProperties")
                      else _strip_titles(value))
                for key, value in schema.items() if key != "title"}
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema


def _strip_titles_in(mapping: Any) -> Any:
    return {key: _strip_titles(value) for key, value in mapping.items()} if isinstance(mapping, dict) else mapping


__all__ = ["MARK", "arguments_model", "function_tool", "to_result", "tools_in"]
