"""Function tools: ``@dossier.tools.tool`` on an ``async def`` makes a tool the registry runs like a built-in one."""

from __future__ import annotations

import json
import sys
import types
from datetime import timedelta
from typing import Literal, Optional

import pydantic
import pytest

from activities.tools.base import ToolArgumentError, ToolContext, ToolResult
from activities.tools.registry import ToolRegistry
from dossier.tools import ToolModuleError, load_tool_modules, registered, registry_with, tool
from policy.enums import FreshnessClass, PrivacyClass


class Region(pydantic.BaseModel):
    """A sales region."""

    name: str
    code: int = 1


@tool(name="test.weather", privacy="public", freshness="volatile", stale_after=600, revalidate_with="test.weather",
      summary_fields=("city", "unit"), key_args=("city",), max_attempts=5, retry_critical=True)
async def weather(city: str, unit: Literal["c", "f"] = "c", days: list[int] = [], tags: Optional[dict] = None,
                  region: Region | None = None, ratio: float = 1.0, exact: bool = False) -> dict:
    """The current weather in a city.

    Args:
        city: the city's name,
            in English.
        unit: degrees Celsius or Fahrenheit.

    Returns:
        The weather.
    """
    return {"city": city, "unit": unit, "days": days, "region": region, "ratio": ratio, "exact": exact}


@tool
async def echo(text: str, context: ToolContext) -> str:
    """Say it back."""
    return f"{text} (attempt {context.attempt})"


def test_metadata_become_the_spec_and_retry_settings():
    spec_tool = registered(weather)
    spec = spec_tool.spec
    assert spec.name == "test.weather"
    assert spec.privacy is PrivacyClass.PUBLIC and spec.freshness is FreshnessClass.VOLATILE
    assert spec.ttl == timedelta(seconds=600)
    assert spec.revalidate_with == ("test.weather",) and spec.key_args == ("city",)
    assert spec.summary_fields == ("city", "unit") and spec.retry_critical
    assert spec_tool.max_attempts == 5 and not spec_tool.deferred
    assert spec_tool.description == "The current weather in a city."


def test_the_default_name_is_module_qualified_and_the_function_still_works():
    assert registered(echo).name == f"{__name__}.echo"
    assert weather.__name__ == "weather"  # the decorator returns the function itself


def test_the_schema_comes_from_the_type_hints():
    schema = registered(weather).parameters
    properties = schema["properties"]
    assert schema["required"] == ["city"] and schema["additionalProperties"] is False
    assert properties["city"] == {"type": "string", "description": "the city's name, in English."}
    assert properties["unit"]["enum"] == ["c", "f"] and properties["unit"]["default"] == "c"
    assert properties["days"]["items"] == {"type": "integer"}
    assert {"type": "null"} in properties["tags"]["anyOf"]
    assert {"$ref": "#/$defs/Region"} in properties["region"]["anyOf"]
    assert schema["$defs"]["Region"]["required"] == ["name"]
    assert properties["ratio"]["type"] == "number" and properties["exact"]["type"] == "boolean"
    assert "context" not in registered(echo).parameters["properties"]
    assert "title" not in json.dumps(schema)


async def test_it_runs_through_the_registry_with_validated_parsed_arguments(make_context):
    registry = ToolRegistry([registered(weather), registered(echo)])
    result = await registry.execute("test.weather", make_context(), {"city": "Oslo", "region": {"name": "north"},
                                                                   "days": [1, 2.0]})
    assert result.content_type == "application/json"
    assert json.loads(result.payload) == {"city": "Oslo", "unit": "c", "days": [1, 2],
                                          "region": {"name": "north", "code": 1}, "ratio": 1.0, "exact": False}
    said = await registry.execute(f"{__name__}.echo", make_context(attempt=2), {"text": "hi"})
    assert said == ToolResult(payload=b"hi (attempt 2)", content_type="text/plain; charset=utf-8")


@pytest.mark.parametrize(("arguments", "message"), [
    ({}, "missing required argument\\(s\\): city"),
    ({"city": "Oslo", "unit": "k"}, "unit must be one of \\['c', 'f'\\]"),
    ({"city": "Oslo", "region": {"code": 2}}, "region: missing required argument\\(s\\): name"),
    ({"city": "Oslo", "days": ["x"]}, "days\\[0\\] must be an integer"),
    ({"city": "Oslo", "context": 1}, "unknown argument\\(s\\): context"),
])
async def test_bad_arguments_are_refused_before_the_function_runs(make_context, arguments, message):
    registry = ToolRegistry([registered(weather)])
    with pytest.raises(ToolArgumentError, match=message):
        await registry.execute("test.weather", make_context(), arguments)


def test_a_deferred_tool_has_no_runner():
    @tool(name="test.pick", deferred=True)
    async def pick(question: str) -> str:
        """Ask the user to pick."""

    assert registered(pick).deferred and registered(pick).run is None


def test_what_cannot_be_a_tool():
    with pytest.raises(TypeError, match="async def"):
        tool(lambda x: x)
    with pytest.raises(TypeError, match="by name"):
        @tool
        async def spread(*values: int) -> int:
            return 0
    with pytest.raises(TypeError, match="not decorated"):
        registered(len)
    with pytest.raises(ValueError):
        @tool(privacy="everyone")
        async def leak(x: str) -> str:
            return x


def test_tool_modules_load_and_a_broken_one_is_a_clear_error(monkeypatch):
    module = types.ModuleType("test_tool_module_ok")
    module.weather, module.again, module.other = weather, weather, 3  # the same tool twice is registered once
    monkeypatch.setitem(sys.modules, "test_tool_module_ok", module)
    assert [t.name for t in load_tool_modules(["test_tool_module_ok"])] == ["test.weather"]
    assert "test.weather" in registry_with(["test_tool_module_ok"]) and "files.write" in registry_with()
    with pytest.raises(ToolModuleError, match="'no_such_tool_module' failed to import: ModuleNotFoundError"):
        load_tool_modules(["no_such_tool_module"])
