"""Your own tools: decorate an ``async def`` with :func:`tool`.

Example::

    from typing import Literal

    from dossier.tools import tool

    @tool(privacy="public", freshness="volatile", stale_after=600, summary_fields=("city", "temperature_c"))
    async def weather(city: str, unit: Literal["c", "f"] = "c") -> dict:
        \"\"\"The current weather in a city.

        Args:
            city: the city's name, in English.
            unit: degrees Celsius or Fahrenheit.
        \"\"\"
        return {"city": city, "temperature_c": 21}

The function stays callable as before; the decorator only attaches the tool it
describes (see :func:`activities.tools.functions.function_tool` for how the name,
description and argument schema are derived and how results are captured). The
worker registers the decorated tools of the modules an agents file lists under
``tool_modules`` (:func:`load_tool_modules`), next to the built-in ones.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

from activities.tools.base import RegisteredTool, ToolContext, ToolResult
from activities.tools.functions import MARK, function_tool, tools_in
from activities.tools.registry import ToolRegistry, default_registry

F = TypeVar("F", bound=Callable[..., Any])


class ToolModuleError(Exception):
    """A module named under ``tool_modules`` could not be imported (the worker refuses to start)."""


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(*, name: str | None = None, **metadata: Any) -> Callable[[F], F]: ...


def tool(fn: Callable[..., Any] | None = None, /, **metadata: Any) -> Any:
    """Register an ``async def`` as a tool, bare (``@tool``) or with metadata (``@tool(privacy="public")``).

    Args:
        fn: the function (when used bare).
        **metadata: the keyword arguments of :func:`~activities.tools.functions.function_tool`:
            ``name``, ``description``, ``privacy``, ``freshness``, ``stale_after``, ``revalidate_with``,
            ``key_args``, ``retry_critical``, ``summary_fields``, ``summary_chars``, ``result_kind``,
            ``deferred``, ``max_attempts``, ``timeout_seconds``, ``heartbeat_seconds``.

    Returns:
        The function itself, carrying its :class:`RegisteredTool` (read it with :func:`registered`).

    Raises:
        TypeError: not an ``async def``, or parameters that cannot be described as JSON Schema.
        ValueError: bad metadata.
    """
    def decorate(function: F) -> F:
        setattr(function, MARK, function_tool(function, **metadata))
        return function

    return decorate(fn) if fn is not None else decorate


def registered(fn: Callable[..., Any]) -> RegisteredTool:
    """The tool a decorated function describes.

    Raises:
        TypeError: the function is not decorated with :func:`tool`.
    """
    found = getattr(fn, MARK, None)
    if not isinstance(found, RegisteredTool):
        raise TypeError(f"{getattr(fn, '__qualname__', fn)!r} is not decorated with @dossier.tools.tool")
    return found


def load_tool_modules(modules: Iterable[str], search_path: Iterable[Path] = ()) -> list[RegisteredTool]:
    """Import the named modules and collect their decorated tools (each tool once, in module order).

    Args:
        search_path: folders put at the front of ``sys.path`` first (the worker passes its working
            directory, as ``python -m`` would, so a project's own modules import from a console script).

    Raises:
        ToolModuleError: a module failed to import (the message names it and the cause).
    """
    modules = list(modules)
    for folder in search_path if modules else ():
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    tools: dict[int, RegisteredTool] = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception as error:
            raise ToolModuleError(f"tool module {name!r} failed to import: {type(error).__name__}: {error}") from error
        for found in tools_in(module):
            tools.setdefault(id(found), found)
    return list(tools.values())


def registry_with(modules: Sequence[str] = (), extra: Iterable[RegisteredTool] = (),
                  search_path: Iterable[Path] = ()) -> ToolRegistry:
    """The built-in tools plus the decorated tools of ``modules`` (see :func:`load_tool_modules`) and ``extra``.

    Raises:
        ToolModuleError: a module failed to import.
        ValueError: a name clash with a built-in tool, or an invalid tool.
    """
    return ToolRegistry([*default_registry(), *load_tool_modules(modules, search_path), *extra])


__all__ = ["ToolContext", "ToolModuleError", "ToolResult", "load_tool_modules", "registered", "registry_with", "tool"]
