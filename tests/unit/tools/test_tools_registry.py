"""The registry: OpenAI schemas, the policy catalog, execution and its error sorting."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

from activities.tools.base import (
    DeferredToolError,
    RegisteredTool,
    ToolArgumentError,
    ToolError,
    ToolExecutionError,
    ToolResult,
    ToolSchemaError,
    UnknownToolError,
)
from activities.tools.registry import ToolRegistry, canonical_name, wire_name
from policy.enums import FreshnessClass, PrivacyClass
from policy.tools import ToolCatalog, ToolSpec

EXPECTED_TOOLS = [
    "diag.flaky", "diag.sleep", "files.write", "load_skill", "recall", "remember", "table.aggregate",
    "user.pick_file",
    "workspace.list_files", "workspace.read_csv",
]
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The pattern the OpenAI API enforces on function names."""

SPEC_TABLE = [
    # (tool, privacy, freshness, result_kind, retry_critical, deferred, max_attempts, timeout, heartbeat)
    ("workspace.list_files", PrivacyClass.USER, FreshnessClass.SESSION, "json", False, False, 3, 30.0, None),
    ("workspace.read_csv", PrivacyClass.USER, FreshnessClass.DURABLE, "csv", False, False, 3, 30.0, None),
    ("table.aggregate", PrivacyClass.USER, FreshnessClass.DURABLE, "json", False, False, 3, 30.0, None),
    ("files.write", PrivacyClass.USER, FreshnessClass.PERMANENT, "file", False, False, 3, 60.0, None),
    ("user.pick_file", PrivacyClass.USER, FreshnessClass.SESSION, "json", False, True, 1, 60.0, None),
    ("diag.flaky", PrivacyClass.PUBLIC, FreshnessClass.SESSION, "json", True, False, 5, 10.0, None),
    ("diag.sleep", PrivacyClass.PUBLIC, FreshnessClass.SESSION, "json", False, False, 3, 120.0, 2.0),
    # recall's result is raised to its source's class at capture; remember waits for the user.
    ("recall", PrivacyClass.PUBLIC, FreshnessClass.SESSION, "auto", False, False, 3, 60.0, None),
    ("remember", PrivacyClass.USER, FreshnessClass.SESSION, "json", False, True, 1, 60.0, None),
]


def test_default_registry_has_every_tool(registry):
    assert registry.names() == EXPECTED_TOOLS
    assert len(registry) == len(EXPECTED_TOOLS)
    assert [tool.name for tool in registry] == EXPECTED_TOOLS
    assert "workspace.read_csv" in registry and "workspace__read_csv" not in registry


@pytest.mark.parametrize(
    ("name", "privacy", "freshness", "kind", "critical", "deferred", "attempts", "timeout", "heartbeat"),
    SPEC_TABLE, ids=[row[0] for row in SPEC_TABLE],
)
def test_tool_specs_and_retry_settings(registry, name, privacy, freshness, kind, critical, deferred, attempts,
                                       timeout, heartbeat):
    tool = registry.get(name)
    assert tool.spec.privacy is privacy
    assert tool.spec.freshness is freshness
    assert tool.spec.result_kind == kind
    assert tool.spec.retry_critical is critical
    assert tool.deferred is deferred and (tool.run is None) is deferred
    assert (tool.max_attempts, tool.timeout_seconds, tool.heartbeat_seconds) == (attempts, timeout, heartbeat)


def test_catalog_carries_every_spec(registry):
    catalog = registry.catalog()
    assert isinstance(catalog, ToolCatalog)
    assert [spec.name for spec in catalog.tools] == EXPECTED_TOOLS
    for name in EXPECTED_TOOLS:
        assert catalog.spec(name) == registry.get(name).spec
    assert catalog.spec("table.aggregate").summary_fields[:3] == ("total", "groups.group", "groups.sum")
    assert catalog.spec("table.aggregate").key_args == ("path", "group_by", "value")
    # The catalog is policy data: it must survive a JSON round trip unchanged.
    assert ToolCatalog.model_validate_json(catalog.model_dump_json()) == catalog


def test_schemas_are_valid_openai_function_entries(registry):
    schemas = registry.schemas()
    assert len(schemas) == len(EXPECTED_TOOLS)
    for entry, name in zip(schemas, EXPECTED_TOOLS, strict=True):
        assert set(entry) == {"type", "function"} and entry["type"] == "function"
        function = entry["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert OPENAI_NAME.fullmatch(function["name"]), function["name"]
        assert canonical_name(function["name"]) == name
        assert isinstance(function["description"], str) and len(function["description"]) > 20
        parameters = function["parameters"]
        assert parameters["type"] == "object"
        assert parameters["additionalProperties"] is False
        assert set(parameters["required"]) <= set(parameters["properties"])
        for prop in parameters["properties"].values():
            assert prop["type"] in {"string", "integer", "number", "boolean", "array", "object"}
            assert prop.get("description")
    json.dumps(schemas)  # what the provider sends must be plain JSON


def test_schemas_are_the_same_every_time(registry):
    assert json.dumps(registry.schemas()) == json.dumps(registry.schemas())


@pytest.mark.parametrize(("canonical", "wire"), [
    ("workspace.read_csv", "workspace__read_csv"),
    ("diag.flaky", "diag__flaky"),
    ("echo", "echo"),
])
def test_wire_names_round_trip(canonical, wire):
    assert wire_name(canonical) == wire
    assert canonical_name(wire) == canonical
    assert canonical_name(canonical) == canonical


def test_unknown_tool(registry):
    with pytest.raises(UnknownToolError, match=r"unknown tool 'web\.search'"):
        registry.get("web.search")


def test_a_wire_name_is_not_a_tool_name_but_the_error_says_how_to_map_it(registry):
    with pytest.raises(UnknownToolError, match="canonical_name"):
        registry.get("workspace__read_csv")


async def test_execute_unknown_tool(registry, make_context):
    with pytest.raises(UnknownToolError):
        await registry.execute("nope.tool", make_context(), {})


async def test_deferred_tool_cannot_execute(registry, make_context):
    with pytest.raises(DeferredToolError, match="answered by the user") as caught:
        await registry.execute("user.pick_file", make_context(), {"prompt": "Which file?"})
    assert isinstance(caught.value, ToolError)
    assert caught.value.retryable is False


def test_error_tree_sorts_permanent_from_transient():
    assert ToolExecutionError.retryable is True
    for permanent in (UnknownToolError, DeferredToolError, ToolArgumentError):
        assert issubclass(permanent, ToolError) and permanent.retryable is False


BAD_ARGUMENTS = [
    ("workspace.read_csv", {}, "missing required argument"),
    ("workspace.read_csv", {"path": 7}, "path must be a string"),
    ("workspace.read_csv", {"path": ""}, "must not be shorter"),
    ("workspace.read_csv", {"path": "a.csv", "encoding": "latin-1"}, "unknown argument"),
    ("table.aggregate", {"path": "sales/2026-q3-orders.csv", "group_by": "region"}, "missing required argument"),
    ("files.write", {"name": "r.md"}, "content"),
    ("diag.flaky", {"fail_times": "2"}, "must be an integer"),
    ("diag.flaky", {"fail_times": True}, "must be an integer"),
    ("diag.flaky", {"fail_times": 2.5}, "must be an integer"),
    ("diag.flaky", {"fail_times": -1}, "at least 0"),
    ("diag.sleep", {"seconds": 1000}, "at most 100"),
    ("diag.sleep", {"seconds": "5"}, "finite number"),
    ("workspace.list_files", ["sales/"], "must be a JSON object"),
]


@pytest.mark.parametrize(("name", "arguments", "message"), BAD_ARGUMENTS,
                         ids=[f"{row[0]}-{row[2]}" for row in BAD_ARGUMENTS])
async def test_bad_arguments_are_permanent_errors(registry, make_context, name, arguments, message):
    with pytest.raises(ToolArgumentError, match=message) as caught:
        await registry.execute(name, make_context(), arguments)
    assert str(caught.value).startswith(f"{name}: ")
    assert caught.value.retryable is False


async def test_defaults_are_filled_in(registry, make_context):
    everything = await registry.execute("workspace.list_files", make_context(), {})
    explicit = await registry.execute("workspace.list_files", make_context(), {"prefix": ""})
    assert everything == explicit


def _tool(name: str, run=None, **fields) -> RegisteredTool:
    async def default_run(context, arguments):
        return ToolResult(payload=b"{}", content_type="application/json")

    return RegisteredTool(spec=ToolSpec(name=name), description=f"{name} for tests",
                          parameters={"type": "object", "properties": {}}, run=run or default_run, **fields)


async def test_an_unexpected_exception_becomes_a_retryable_execution_error(make_context):
    async def crash(context, arguments):
        raise KeyError("column")

    registry = ToolRegistry([_tool("test.crash", crash)])
    with pytest.raises(ToolExecutionError, match=r"test\.crash failed: KeyError") as caught:
        await registry.execute("test.crash", make_context(), {})
    assert isinstance(caught.value.__cause__, KeyError)


async def test_a_tool_returning_something_else_fails(make_context):
    async def wrong(context, arguments):
        return b"raw bytes"

    registry = ToolRegistry([_tool("test.wrong", wrong)])
    with pytest.raises(ToolExecutionError, match="not a ToolResult"):
        await registry.execute("test.wrong", make_context(), {})


@pytest.mark.parametrize(("tools", "message"), [
    ([_tool("a.b"), _tool("a.b")], "registered twice"),
    ([_tool("bad name")], "cannot be offered"),
    ([_tool("double__underscore")], "cannot be offered"),
    ([_tool("x" * 70)], "cannot be offered"),
])
def test_registry_refuses_bad_tool_sets(tools, message):
    with pytest.raises(ValueError, match=message):
        ToolRegistry(tools)


def test_registry_refuses_invalid_schemas_with_a_typed_error():
    tool = RegisteredTool(spec=ToolSpec(name="t.x"), description="x",
                          parameters={"type": "object", "properties": {"n": {"type": "integer", "minimum": "one"}}},
                          run=_tool("t.y").run)
    with pytest.raises(ToolSchemaError, match=r"t\.x\.parameters\.properties\.n\.minimum: invalid JSON schema"):
        ToolRegistry([tool])
    with pytest.raises(ToolSchemaError, match="must be an object schema"):
        ToolRegistry([RegisteredTool(spec=ToolSpec(name="t.z"), description="z", parameters={"type": "array"},
                                     run=_tool("t.y").run)])


def test_deferred_and_run_must_agree():
    with pytest.raises(ValueError, match="deferred"):
        RegisteredTool(spec=ToolSpec(name="t.x"), description="x", parameters={"type": "object"}, run=None)
    with pytest.raises(ValueError, match="deferred"):
        _tool("t.y", deferred=True)


def test_registered_tools_are_immutable(registry):
    tool = registry.get("diag.sleep")
    with pytest.raises(AttributeError):
        tool.max_attempts = 9  # type: ignore[misc]
    assert tool.spec.ttl is None or isinstance(tool.spec.ttl, timedelta)


def test_schemas_offer_only_an_allow_list(registry):
    offered = [entry["function"]["name"] for entry in registry.schemas(["workspace.read_csv", "files.write", "x.y"])]
    assert offered == ["files__write", "workspace__read_csv"]
    assert len(registry.schemas(None)) == len(registry) and registry.schemas(()) == []


def test_a_participant_is_offered_its_allow_list_else_everything_but_drills_for_real_models(registry):
    assert registry.offered("scripted") == registry.offered(None) == EXPECTED_TOOLS
    real = [name for name in EXPECTED_TOOLS if not name.startswith("diag.")]
    for provider in ("local", "openai", "anthropic"):
        assert registry.offered(provider) == real
    assert registry.offered("local", ["workspace.read_csv", "diag.sleep", "no.such"]) == [
        "diag.sleep", "workspace.read_csv"]
    assert registry.offered("scripted", []) == []
    assert [s["function"]["name"] for s in registry.schemas(["workspace.read_csv"])] == ["workspace__read_csv"]
    assert registry.unknown(["workspace.read_csv", "no.such"]) == ["no.such"]
