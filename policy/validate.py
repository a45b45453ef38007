"""Provider-valid message lists: what OpenAI's and Anthropic's APIs both accept.

An assembled context is sent to a real provider, and a list a provider
refuses is a failed model call. The rules checked here are the ones both
chat APIs enforce (OpenAI chat completions; Anthropic Messages after the
usual conversion: leading system messages become the ``system`` blocks,
``tool`` messages become ``tool_result`` blocks of one user turn):

* system messages only before every other message (Anthropic has no
  mid-conversation system turn);
* the first message after them is a user message (Anthropic);
* user and system messages have text; an assistant message has text or tool
  calls;
* a tool call's id and name are 1-64 characters of ``[A-Za-z0-9_-]``, and ids
  are unique in the request;
* every tool call is answered by exactly one tool message, and the answers
  come right after the assistant message that asked, before anything else;
* no tool message answers a call that is not the immediately preceding
  assistant message's (no orphans, no duplicates).

The last is the compaction bug agents hit most (a trimmed history keeps a
tool result whose call it dropped, or the reverse); :func:`provider_problems`
names every violation, and :func:`require_valid` raises on the first list
that has one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from policy.errors import PolicyError

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What both APIs accept as a tool name or tool-call id."""


class InvalidContextError(PolicyError):
    """An assembled message list that OpenAI's or Anthropic's API would refuse."""


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return ""


def _calls(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for call in message.get("tool_calls") or ():
        function = call.get("function", call)
        out.append((str(call.get("id", "")), str(function.get("name", ""))))
    return out


def _problem(index: int, rule: str, detail: str = "") -> str:
    """``message <index>: <rule>[ (<detail>)]``; :func:`problem_rule` takes the rule back out."""
    return f"message {index}: {rule}" + (f" ({detail})" if detail else "")


def problem_rule(problem: str) -> str:
    """The rule a problem line names, without the message index and the ids (for counting kinds)."""
    rule = problem.split(": ", 1)[-1]
    return rule.rsplit(" (", 1)[0] if rule.endswith(")") else rule


def provider_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every rule a message list breaks (empty: OpenAI and Anthropic both accept it).

    Args:
        messages: OpenAI chat-completions messages (``ChatMessage.to_openai()`` form).

    Returns:
        One line per violation, naming the message index.
    """
    problems: list[str] = []
    seen_ids: set[str] = set()
    open_calls: list[str] = []
    """Calls of the last assistant message not answered yet."""
    answering = False
    """Inside the run of tool messages that follows an assistant message with calls."""
    conversation_started = False
    for index, message in enumerate(messages):
        role = message.get("role")
        if role != "tool" and open_calls:
            problems.append(_problem(index - 1, "a tool call has no result before the next message",
                                     ", ".join(open_calls)))
            open_calls = []
        if role != "tool":
            answering = False
        if role == "system":
            if conversation_started:
                problems.append(_problem(index, "a system message after the conversation started"))
            if not _text(message).strip():
                problems.append(_problem(index, "an empty system message"))
            continue
        if not conversation_started:
            conversation_started = True
            if role != "user":
                problems.append(_problem(index, "the conversation does not start with a user message", str(role)))
        if role == "user":
            if not _text(message).strip():
                problems.append(_problem(index, "an empty user message"))
        elif role == "assistant":
            calls = _calls(message)
            if not calls and not _text(message).strip():
                problems.append(_problem(index, "an assistant message with neither text nor tool calls"))
            for call_id, name in calls:
                if not _NAME.fullmatch(call_id):
                    problems.append(_problem(index, "a tool-call id is not 1-64 of [A-Za-z0-9_-]", call_id))
                if not _NAME.fullmatch(name):
                    problems.append(_problem(index, "a tool name is not 1-64 of [A-Za-z0-9_-]", name))
                if call_id in seen_ids:
                    problems.append(_problem(index, "a tool-call id is used twice in the request", call_id))
                seen_ids.add(call_id)
            open_calls = [call_id for call_id, _ in calls]
            answering = bool(calls)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not answering or call_id not in open_calls:
                problems.append(_problem(index, "a tool result answers no open call of the preceding assistant "
                                                "message", str(call_id)))
            else:
                open_calls.remove(call_id)
            if not isinstance(message.get("content"), str):
                problems.append(_problem(index, "a tool result without text content"))
        else:
            problems.append(_problem(index, "an unknown role", str(role)))
    if open_calls:
        problems.append(_problem(len(messages) - 1, "a tool call has no result", ", ".join(open_calls)))
    return problems


def require_valid(messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise when a message list breaks a rule of :func:`provider_problems`.

    Raises:
        InvalidContextError: naming every violation.
    """
    problems = provider_problems(messages)
    if problems:
        raise InvalidContextError("assembled messages a provider would refuse: " + "; ".join(problems))


__all__ = ["InvalidContextError", "problem_rule", "provider_problems", "require_valid"]
