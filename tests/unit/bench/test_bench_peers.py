"""Each peer strategy, on a small hand-built transcript: it really trims or clears, pairs stay consistent."""

from __future__ import annotations

import json

import pytest

from activities.tokens import token_counter
from harness.bench.peers import (
    ANTHROPIC_PLACEHOLDER,
    AnthropicClearToolUses,
    LangChainClearToolUses,
    LangChainTrim,
    OpenAIToolOutputTrimmer,
    from_response_items,
    orphan_tool_results,
    peer_strategies,
    to_response_items,
)
from harness.bench.strategy import CallInput, count_tokens
from harness.bench.traces_measure import call_values, command_tokens, is_strict, occurs, trace_calls


@pytest.fixture(scope="module")
def counter():
    return token_counter()


def _transcript() -> list[dict]:
    """System, then three user turns, each with two tool calls whose results are long."""
    messages: list[dict] = [{"role": "system", "content": "You are a careful assistant."}]
    n = 0
    for turn in range(3):
        messages.append({"role": "user", "content": f"Turn {turn}: look up order ORD-{turn}00."})
        for _ in range(2):
            n += 1
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{n}", "type": "function",
                 "function": {"name": "lookup", "arguments": json.dumps({"order": f"ORD-{turn}00", "n": n})}}]})
            body = " ".join(f"row{n}-{i} value {i * 7}" for i in range(150))
            messages.append({"role": "tool", "tool_call_id": f"call_{n}", "name": "lookup", "content": body})
        messages.append({"role": "assistant", "content": f"Order ORD-{turn}00 looked up."})
    return messages


def _pairs_consistent(messages: list[dict]) -> bool:
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return not orphan_tool_results(messages) and set(results) <= set(calls)


def test_langchain_trim_trims_to_the_budget_and_starts_on_a_human_turn(counter) -> None:
    messages = _transcript()
    strategy = LangChainTrim(counter)
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    budget = count_tokens([messages[0], *messages[last_user:]], counter) + 50
    out = strategy.context(CallInput(messages=messages, token_budget=budget))
    assert count_tokens(out, counter) <= budget < count_tokens(messages, counter)
    # The system prompt and the last whole turn; the tail of the turn before is cut at a human message.
    assert out == [messages[0], *messages[last_user:]]
    assert _pairs_consistent(out)
    # When not even the last turn fits, only the system prompt is left (start_on="human").
    assert strategy.context(CallInput(messages=messages, token_budget=100)) == [messages[0]]
    assert strategy.orphans_dropped == 0
    assert strategy.parameters["start_on"] == "human" and strategy.parameters["langchain-core"]


def test_langchain_clear_tool_uses_clears_all_but_the_last_three(counter) -> None:
    messages = _transcript()
    strategy = LangChainClearToolUses(counter)
    out = strategy.context(CallInput(messages=messages, token_budget=600))
    tool_contents = [m["content"] for m in out if m["role"] == "tool"]
    assert tool_contents[:3] == ["[cleared]"] * 3
    assert all(c != "[cleared]" for c in tool_contents[3:])
    assert len(out) == len(messages) and _pairs_consistent(out)
    assert strategy.parameters["keep"] == 3 and strategy.parameters["placeholder"] == "[cleared]"
    assert strategy.parameters["langchain"]
    # Under the trigger nothing changes.
    untouched = strategy.context(CallInput(messages=messages, token_budget=10**6))
    assert [m["content"] for m in untouched] == [m["content"] for m in messages]


def test_openai_trimmer_trims_outputs_older_than_two_user_turns(counter) -> None:
    messages = _transcript()
    strategy = OpenAIToolOutputTrimmer()
    out = strategy.context(CallInput(messages=messages))
    tool_contents = [m["content"] for m in out if m["role"] == "tool"]
    assert all(c.startswith("[Trimmed: lookup output") for c in tool_contents[:2])
    assert tool_contents[2:] == [m["content"] for m in messages if m["role"] == "tool"][2:]
    assert len(out) == len(messages) and _pairs_consistent(out)
    assert strategy.parameters["recent_turns"] == 2 and strategy.parameters["openai-agents"]


def test_response_items_round_trip() -> None:
    messages = _transcript()
    instructions, items = to_response_items(messages)
    assert instructions == messages[0]["content"]
    assert {i["type"] for i in items} == {"message", "function_call", "function_call_output"}
    back = from_response_items(instructions, items)
    assert [(m["role"], m.get("content"), m.get("tool_calls")) for m in back] == [
        (m["role"], m.get("content"), m.get("tool_calls")) for m in messages]


def test_anthropic_default_trigger_does_not_fire_and_budget_trigger_clears(counter) -> None:
    messages = _transcript()
    default = AnthropicClearToolUses(counter)
    assert default.context(CallInput(messages=messages, token_budget=600)) == messages
    assert default.parameters["trigger"]["value"] == 100_000 and default.parameters["keep"]["value"] == 3
    scaled = AnthropicClearToolUses(counter, trigger=None)
    assert scaled.name == "anthropic_clear_tool_uses@budget"
    out = scaled.context(CallInput(messages=messages, token_budget=600))
    tool_contents = [m["content"] for m in out if m["role"] == "tool"]
    assert tool_contents[:3] == [ANTHROPIC_PLACEHOLDER] * 3
    assert tool_contents[3:] == [m["content"] for m in messages if m["role"] == "tool"][3:]
    assert _pairs_consistent(out)
    # clear_at_least larger than what can be cleared: the edit is not applied.
    strict = AnthropicClearToolUses(counter, trigger=600, clear_at_least=10**6)
    assert strict.context(CallInput(messages=messages)) == messages


def test_every_peer_states_its_parameters(counter) -> None:
    peers = peer_strategies(counter)
    assert [p.name for p in peers] == ["langchain_trim", "langchain_clear_tool_uses", "openai_tool_output_trimmer",
                                       "anthropic_clear_tool_uses", "anthropic_clear_tool_uses@budget"]
    assert all(p.parameters for p in peers)


def test_reference_measure_follows_the_readme() -> None:
    assert occurs("250", "cost 250 USD") and not occurs("250", "cost 2500 USD") and occurs("250", "x_250_")
    assert is_strict("NO6JO3") and is_strict("a@b.co") and not is_strict("2024-05-15") and not is_strict("SEA")
    assert call_values({"tool_calls": [{"arguments": {"a": " abc ", "b": [250, True, None, "x"], "c": 5.5,
                                                      "d": {"e": "abc"}}}]}) == ["abc", "250", "5.5"]
    messages = [
        {"role": "user", "content": "I am user_42"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "f", "arguments": {"u": "user_42", "z": "ZZ9"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{'order': 'ORD9', 'z': 'ZZ9'}"},
        {"role": "assistant", "tool_calls": [{"id": "c2", "name": "g", "arguments": {"o": "ORD9", "z": "ZZ9"}}]},
    ]
    calls = trace_calls(messages)
    assert [(r.value, r.kind) for r in calls[0].refs] == [("user_42", "user")]  # ZZ9 only in call 0 itself
    assert [(r.value, r.kind, r.first_call) for r in calls[1].refs] == [("ORD9", "tool", 0), ("ZZ9", "tool", 0)]


def test_a_shell_commands_words_are_its_references() -> None:
    assert command_tokens("sed -n 120,140p astropy/io/fits/card.py") == ["120", "140p", "astropy/io/fits/card.py"]
    assert command_tokens("cd /testbed/src && python -m pytest --tb=short 'tests/a b.py::test_x' 2>&1 | tail") == [
        "/testbed/src", "tests/a b.py::test_x", "2", "1"]  # command names and prose words are not values
    assert command_tokens('echo "unbalanced isNaN_') == ["isNaN_"]  # shlex gives up: whitespace split, trimmed
    messages = [
        {"role": "system", "content": "Run commands with bash; use sed and grep."},
        {"role": "user", "content": "Fix the bug in card.py"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "grep -rn Card ."}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "astropy/io/fits/card.py:1210:def _format_value(value):"},
        {"role": "assistant", "tool_calls": [{"id": "c2", "name": "bash", "arguments": {
            "command": "sed -n 1200,1230p astropy/io/fits/card.py && grep -n _format_value astropy/io/fits/card.py"}}]},
    ]
    refs = trace_calls(messages)[1].refs
    # `sed` and `grep` are in the system prompt, `1200`/`1230p` in no result: the path and the name were copied.
    assert [(r.value, r.kind) for r in refs] == [("astropy/io/fits/card.py", "tool"), ("_format_value", "tool")]
