"""The provider-validity check: every list OpenAI or Anthropic would refuse is named, valid lists pass."""

from __future__ import annotations

import pytest

from policy.validate import InvalidContextError, problem_rule, provider_problems, require_valid


def system(text: str = "You are Analyst.") -> dict:
    return {"role": "system", "content": text}


def user(text: str = "hi") -> dict:
    return {"role": "user", "content": text}


def assistant(text: str | None = "ok", *calls: str, name: str = "workspace__read_csv") -> dict:
    message: dict = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"id": c, "type": "function", "function": {"name": name, "arguments": "{}"}}
                                 for c in calls]
    return message


def tool(call_id: str, text: str = "result") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


VALID = [
    ("plain chat", [system(), user(), assistant(), user("more")]),
    ("two system messages first", [system(), system("runtime"), user()]),
    ("a tool step answered", [system(), user(), assistant(None, "call_a"), tool("call_a"), assistant("done")]),
    ("parallel calls answered in any order", [user(), assistant("", "call_a", "call_b"), tool("call_b"),
                                              tool("call_a")]),
    ("the list ends on a tool result", [user(), assistant(None, "call_a"), tool("call_a")]),
    ("consecutive user turns", [user(), user("Critic: no"), assistant()]),
]

INVALID = [
    # (case, messages, what the problem names)
    ("a result whose call was trimmed away", [system(), user(), tool("call_a"), assistant()], "answers no open call"),
    ("a call whose result was trimmed away", [user(), assistant(None, "call_a"), user("next")],
     "has no result"),
    ("a call left open at the end", [user(), assistant(None, "call_a")], "has no result"),
    ("one of two parallel results missing", [user(), assistant(None, "call_a", "call_b"), tool("call_a"),
                                             user()], "before the next message (call_b)"),
    ("a result after an intervening user turn", [user(), assistant(None, "call_a"), user("wait"),
                                                 tool("call_a")], "answers no open call"),
    ("a result answered twice", [user(), assistant(None, "call_a"), tool("call_a"), tool("call_a")],
     "answers no open call"),
    ("a result for a call two steps back", [user(), assistant(None, "call_a"), tool("call_a"),
                                            assistant(None, "call_b"), tool("call_a"), tool("call_b")],
     "answers no open call"),
    ("a system message mid-conversation", [system(), user(), system("Moderator directive: x")],
     "system message after"),
    ("the conversation opens with the assistant", [system(), assistant(), user()],
     "does not start with a user message"),
    ("an empty user turn", [user(""), assistant()], "empty user"),
    ("an empty assistant turn", [user(), assistant(""), user()], "neither text nor tool calls"),
    ("a dotted tool name", [user(), assistant(None, "call_a", name="workspace.read_csv"), tool("call_a")],
     "tool name is not"),
    ("an id with a colon", [user(), assistant(None, "call:a"), tool("call:a")], "tool-call id is not 1-64"),
    ("an id used twice", [user(), assistant(None, "call_a"), tool("call_a"), assistant(None, "call_a"),
                          tool("call_a")], "used twice in the request"),
    ("a result without text", [user(), assistant(None, "call_a"), {"role": "tool", "tool_call_id": "call_a"}],
     "without text"),
    ("an unknown role", [user(), {"role": "function", "content": "x"}], "an unknown role"),
]


@pytest.mark.parametrize("messages", [row[1] for row in VALID], ids=[row[0] for row in VALID])
def test_lists_both_providers_accept(messages):
    assert provider_problems(messages) == []
    require_valid(messages)


@pytest.mark.parametrize(("messages", "named"), [row[1:] for row in INVALID], ids=[row[0] for row in INVALID])
def test_lists_a_provider_refuses_are_named(messages, named):
    problems = provider_problems(messages)
    assert problems and any(named in problem for problem in problems), problems
    with pytest.raises(InvalidContextError, match="a provider would refuse"):
        require_valid(messages)


def test_problems_name_their_rule_apart_from_the_ids():
    [problem] = provider_problems([user(), assistant(None, "call_a"), tool("call_a"), assistant(None, "call_a"),
                                   tool("call_a")])
    assert problem == "message 3: a tool-call id is used twice in the request (call_a)"
    assert problem_rule(problem) == "a tool-call id is used twice in the request"
