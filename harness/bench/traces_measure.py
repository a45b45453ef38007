"""The traces README's measures, implemented as written: reference extraction and matching.

See ``../shared/data/traces/README.md`` ("Carried-reference measure"): per
model call *k*, the leaf argument values of its tool calls (strings stripped,
numbers as JSON, booleans/null skipped, shorter than 3 characters skipped,
deduplicated within the call; a shell command's words instead of the command, see
:func:`command_tokens`); a value *occurs* in a text when it is a
case-sensitive substring not directly preceded or followed by an ASCII letter
or digit. Carried: occurs in an earlier tool message and in no earlier system
or user message. User reference: occurs in an earlier user message and in no
earlier system message. Strict: at least 5 characters, a digit or ``@``, not
a bare date/datetime. A context passes for a reference when it contains the
value verbatim (a plain substring).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.bench.strategy import OpenAIMessage

_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?"
)
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


COMMAND_KEYS = frozenset({"command", "cmd"})
"""Argument keys whose string value is a shell command: its words are the candidates, not the whole string."""
_SHELL_OPERATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "<", ">", ">>", "<<", "<<<", "(", ")", "2>", "2>&1"})
_WORD_TRIM = "'\"`,;:()[]{}"
_VALUE_LIKE = re.compile(r"\d|_|.[/.:]|.[A-Z]")


def command_tokens(command: str) -> list[str]:
    """The words of a shell command that could be values the agent copied from an earlier result.

    A command is one string that never occurs verbatim in a result, but a path, a line number, an
    identifier or a test name inside it does. The tokenisation is the same for every strategy:

    1. split as a POSIX shell would (``shlex`` with punctuation characters, so ``|``, ``;``, ``&&``,
       ``>`` are words of their own); unbalanced quotes fall back to splitting on whitespace;
    2. drop the operators and the options (words starting with ``-``), but keep the value of
       ``--name=value``;
    3. split each word on ``,`` (``sed -n 120,140p`` gives ``120`` and ``140p``) and on newlines, trim
       quotes, brackets and trailing punctuation;
    4. keep a word only when it looks like a value rather than prose or a command name: it holds a digit,
       ``_``, ``/``, ``.`` or ``:`` between other characters, or a capital after its first character
       (``astropy/io/fits/card.py``, ``test_card.py::test_long``, ``1210``, ``_format_value``, ``isNaN``);
       ``grep``, ``else`` and ``Column`` are not counted.

    What survives, at least 3 characters long, goes through the same occurrence rules as any other value
    (an occurrence in a system or user message makes it no reference at all).
    """
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        words = command.split()
    out: list[str] = []
    for word in words:
        if word in _SHELL_OPERATORS or set(word) <= set("|&;<>()"):
            continue
        if word.startswith("-"):
            if "=" not in word:
                continue
            word = word.split("=", 1)[1]
        for part in re.split(r"[,\n]", word):
            part = part.strip().strip(_WORD_TRIM).rstrip(".")
            if part and _VALUE_LIKE.search(part):
                out.append(part)
    return out


def leaf_values(arguments: Any) -> list[str]:
    """Step 1: leaf values of ``arguments`` as strings, in order, duplicates kept; a shell command's
    words (:func:`command_tokens`) in place of the command."""
    out: list[str] = []

    def walk(value: Any, key: str | None = None) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, name)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, (int, float)):
            out.append(json.dumps(value))
        elif isinstance(value, str) and key in COMMAND_KEYS:
            out.extend(command_tokens(value))
        elif isinstance(value, str):
            out.append(value.strip())

    walk(arguments)
    return [v for v in out if len(v) >= 3]


def call_values(message: dict[str, Any]) -> list[str]:
    """The distinct reference candidates of one assistant message (all its tool calls)."""
    seen: dict[str, None] = {}
    for tool_call in message.get("tool_calls") or ():
        for value in leaf_values(tool_call.get("arguments", {})):
            seen.setdefault(value, None)
    return list(seen)


def occurs(value: str, text: str) -> bool:
    """Case-sensitive substring not directly preceded or followed by an ASCII letter or digit."""
    start = text.find(value)
    while start != -1:
        end = start + len(value)
        if (start == 0 or text[start - 1] not in _ALNUM) and (end == len(text) or text[end] not in _ALNUM):
            return True
        start = text.find(value, start + 1)
    return False


def is_strict(value: str) -> bool:
    """Identifier-like: >= 5 characters, a digit or ``@``, not a bare date/datetime."""
    return (len(value) >= 5 and any(c.isdigit() or c == "@" for c in value)
            and _DATE.fullmatch(value) is None)


@dataclass(frozen=True)
class Reference:
    """One reference of one model call."""

    value: str
    kind: str
    """``tool`` (carried) or ``user``."""
    strict: bool
    first_call: int | None = None
    """Model call (0-based) whose tool result first contained it (carried refs)."""
    last_call: int | None = None
    source_tool_call_ids: tuple[str, ...] = ()
    """Trace tool-call ids whose results contained it (carried refs)."""


@dataclass
class TraceCall:
    """Model call *k* of a trajectory: where it is and what it must carry."""

    index: int
    """0-based model call number."""
    message_index: int
    """Index of its assistant message in the trajectory."""
    refs: list[Reference] = field(default_factory=list)


def trace_calls(messages: Sequence[dict[str, Any]]) -> list[TraceCall]:
    """Every model call of a trajectory with its carried and user references."""
    calls: list[TraceCall] = []
    call_of_message: dict[int, int] = {}
    # The model call a tool message's result belongs to: the call that made it.
    call_of_tool_id: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        k = len(calls)
        call_of_message[index] = k
        for tool_call in message.get("tool_calls") or ():
            call_of_tool_id.setdefault(tool_call["id"], k)
        call = TraceCall(index=k, message_index=index)
        earlier = messages[:index]
        system = [m.get("content") or "" for m in earlier if m["role"] == "system"]
        users = [m.get("content") or "" for m in earlier if m["role"] == "user"]
        tools = [m for m in earlier if m["role"] == "tool"]
        for value in call_values(message):
            if any(occurs(value, text) for text in system):
                continue
            in_user = any(occurs(value, text) for text in users)
            sources = [m for m in tools if occurs(value, m.get("content") or "")]
            strict = is_strict(value)
            if sources and not in_user:
                made = [call_of_tool_id.get(m.get("tool_call_id"), k) for m in sources]
                call.refs.append(Reference(value, "tool", strict, min(made), max(made),
                                           tuple(m.get("tool_call_id") for m in sources)))
            if in_user:
                call.refs.append(Reference(value, "user", strict))
        calls.append(call)
    return calls


def to_openai(messages: Sequence[dict[str, Any]]) -> list[OpenAIMessage]:
    """The README's format -> OpenAI chat-completions dicts (arguments as JSON strings)."""
    out: list[OpenAIMessage] = []
    for message in messages:
        converted: OpenAIMessage = {"role": message["role"], "content": message.get("content")}
        if message.get("tool_calls"):
            converted["tool_calls"] = [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}), ensure_ascii=False)}}
                for c in message["tool_calls"]
            ]
        if message["role"] == "tool":
            converted["tool_call_id"] = message["tool_call_id"]
            converted["name"] = message.get("name", "")
        out.append(converted)
    return out
