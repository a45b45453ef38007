"""Peer context strategies, each calling the peer's own library code where it is a library.

* ``langchain_trim``: ``langchain_core.messages.trim_messages`` (keep the last
  messages within a token budget, system prompt kept, start on a human turn).
* ``langchain_clear_tool_uses``: LangChain v1's context-editing middleware edit
  ``ClearToolUsesEdit.apply`` (old tool results replaced by a placeholder).
* ``openai_tool_output_trimmer``: the OpenAI Agents SDK's ``ToolOutputTrimmer``
  ``call_model_input_filter``, run on Responses-API input items.
* ``anthropic_clear_tool_uses``: Anthropic's server-side context edit
  ``clear_tool_uses_20250919``; it runs on Anthropic's servers, so it is
  re-implemented here from its documentation (trigger, keep, clear_at_least,
  exclude_tools, clear_tool_inputs). Its default trigger (100,000 input
  tokens) never fires on short trajectories, so a variant with the trigger at
  the call's token budget is offered too (``anthropic_clear_tool_uses@budget``).

All work on OpenAI chat-completions dicts (see :mod:`harness.bench.strategy`)
and count tokens with the same rule as :func:`harness.bench.strategy.count_tokens`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from harness.bench.strategy import CallInput, OpenAIMessage, TokenCounter, count_tokens
from policy.policy import DEFAULT_POLICY

DEFAULT_BUDGET = DEFAULT_POLICY.default_token_budget
"""Token budget when the call gives none: Dossier's default policy budget, so every strategy gets the same one."""


def _budget(call: CallInput) -> int:
    return DEFAULT_BUDGET if call.token_budget is None else call.token_budget


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _copy(messages: Sequence[OpenAIMessage]) -> list[OpenAIMessage]:
    return [dict(m) for m in messages]


def orphan_tool_results(messages: Sequence[OpenAIMessage]) -> list[int]:
    """Indexes of tool messages whose call is not in an earlier assistant message."""
    seen: set[str] = set()
    orphans: list[int] = []
    for index, message in enumerate(messages):
        for call in message.get("tool_calls") or ():
            seen.add(call.get("id"))
        if message.get("role") == "tool" and message.get("tool_call_id") not in seen:
            orphans.append(index)
    return orphans


# --------------------------------------------------------------------------- LangChain


def _to_langchain(messages: Sequence[OpenAIMessage]):
    from langchain_core.messages import convert_to_messages

    return convert_to_messages(list(messages))


def _from_langchain(messages) -> list[OpenAIMessage]:
    from langchain_core.messages import convert_to_openai_messages

    out = convert_to_openai_messages(list(messages))
    for message in out:
        # convert_to_openai_messages writes content as "" or a block list; keep plain strings.
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        if message.get("content") == "" and message.get("tool_calls"):
            message["content"] = None  # as the transcript had it
    return out


def _langchain_counter(counter: TokenCounter):
    """A ``token_counter`` for LangChain: our rule, one message at a time, cached per object."""
    cache: dict[int, int] = {}

    def count(messages) -> int:
        total = 0
        for message in messages:
            key = id(message)
            if key not in cache:
                cache[key] = count_tokens(_from_langchain([message]), counter)
            total += cache[key]
        return total

    return count


@dataclass
class LangChainTrim:
    """``trim_messages(strategy="last", include_system=True, start_on="human", allow_partial=False)``."""

    counter: TokenCounter
    name: str = "langchain_trim"
    parameters: dict[str, Any] = field(default_factory=dict)
    orphans_dropped: int = 0
    """Tool messages left without their call by the trim and dropped here (expected 0)."""

    def __post_init__(self) -> None:
        self.parameters = {
            "function": "langchain_core.messages.trim_messages",
            "langchain-core": version("langchain-core"),
            "strategy": "last",
            "max_tokens": f"the call's token budget (default {DEFAULT_BUDGET})",
            "token_counter": "tiktoken, count_tokens rule (content + tool-call name and JSON arguments + 4/message)",
            "include_system": True,
            "start_on": "human",
            "end_on": None,
            "allow_partial": False,
        }

    def context(self, call: CallInput) -> list[OpenAIMessage]:
        from langchain_core.messages import trim_messages

        if not call.messages:
            return []
        trimmed = trim_messages(
            _to_langchain(call.messages),
            max_tokens=_budget(call),
            token_counter=_langchain_counter(self.counter),
            strategy="last",
            include_system=True,
            start_on="human",
            allow_partial=False,
        )
        out = _from_langchain(trimmed)
        orphans = orphan_tool_results(out)
        if orphans:
            self.orphans_dropped += len(orphans)
            out = [m for i, m in enumerate(out) if i not in set(orphans)]
        return out


@dataclass
class LangChainClearToolUses:
    """LangChain v1 ``ClearToolUsesEdit.apply`` on the non-system messages.

    The middleware's default trigger (100,000 tokens) never fires on these
    trajectories, so the trigger is the call's token budget; ``keep``,
    ``clear_at_least``, ``clear_tool_inputs``, ``exclude_tools`` and
    ``placeholder`` are the library defaults. As in ``ContextEditingMiddleware``
    the system prompt is not part of the edited (and counted) messages.
    """

    counter: TokenCounter
    name: str = "langchain_clear_tool_uses"
    parameters: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from langchain.agents.middleware import ClearToolUsesEdit

        defaults = ClearToolUsesEdit()
        self.parameters = {
            "function": "langchain.agents.middleware.ClearToolUsesEdit.apply",
            "langchain": version("langchain"),
            "trigger": f"the call's token budget (default {DEFAULT_BUDGET}); library default "
                       f"{defaults.trigger} never fires here",
            "keep": defaults.keep,
            "clear_at_least": defaults.clear_at_least,
            "clear_tool_inputs": defaults.clear_tool_inputs,
            "exclude_tools": list(defaults.exclude_tools),
            "placeholder": defaults.placeholder,
            "count_tokens": "tiktoken, count_tokens rule, over the messages without the system prompt",
        }

    def context(self, call: CallInput) -> list[OpenAIMessage]:
        from langchain.agents.middleware import ClearToolUsesEdit

        messages = _copy(call.messages)
        system = messages[:1] if messages and messages[0].get("role") == "system" else []
        rest = _to_langchain(messages[len(system):])
        if rest:
            edit = ClearToolUsesEdit(trigger=_budget(call))
            edit.apply(rest, count_tokens=_langchain_counter(self.counter))
        return system + (_from_langchain(rest) if rest else [])


# --------------------------------------------------------------------------- OpenAI Agents SDK


def to_response_items(messages: Sequence[OpenAIMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """Chat messages -> (instructions, Responses-API input items)."""
    instructions = None
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "system" and index == 0:
            instructions = message.get("content") or ""
        elif role in ("system", "user"):
            items.append({"type": "message", "role": role, "content": message.get("content") or ""})
        elif role == "assistant":
            if message.get("content"):
                items.append({"type": "message", "role": "assistant", "content": message["content"]})
            for tool_call in message.get("tool_calls") or ():
                function = tool_call.get("function", tool_call)
                items.append({"type": "function_call", "call_id": tool_call["id"], "name": function["name"],
                              "arguments": _arguments_text(function.get("arguments", {}))})
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"],
                          "output": message.get("content") or ""})
    return instructions, items


def from_response_items(instructions: str | None, items: Sequence[dict[str, Any]]) -> list[OpenAIMessage]:
    """Responses-API input items -> chat messages.

    Function calls join the assistant message just before them (text or calls),
    until a tool output or another message closes it.
    """
    out: list[OpenAIMessage] = [{"role": "system", "content": instructions}] if instructions is not None else []
    names: dict[str, str] = {}
    open_assistant: OpenAIMessage | None = None
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            names[item["call_id"]] = item["name"]
            tool_call = {"id": item["call_id"], "type": "function",
                         "function": {"name": item["name"], "arguments": item["arguments"]}}
            if open_assistant is None:
                open_assistant = {"role": "assistant", "content": None}
                out.append(open_assistant)
            open_assistant.setdefault("tool_calls", []).append(tool_call)
        elif kind == "function_call_output":
            open_assistant = None
            output = item.get("output")
            out.append({"role": "tool", "tool_call_id": item["call_id"], "name": names.get(item["call_id"], ""),
                        "content": output if isinstance(output, str) else json.dumps(output)})
        else:
            message = {"role": item["role"], "content": item.get("content")}
            out.append(message)
            open_assistant = message if item["role"] == "assistant" else None
    return out


@dataclass
class OpenAIToolOutputTrimmer:
    """``agents.extensions.ToolOutputTrimmer`` with its defaults, called as the SDK calls it."""

    name: str = "openai_tool_output_trimmer"
    parameters: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from agents.extensions.tool_output_trimmer import ToolOutputTrimmer

        trimmer = ToolOutputTrimmer()
        self._trimmer = trimmer
        self.parameters = {
            "function": "agents.extensions.tool_output_trimmer.ToolOutputTrimmer.__call__",
            "openai-agents": version("openai-agents"),
            "recent_turns": trimmer.recent_turns,
            "max_output_chars": trimmer.max_output_chars,
            "preview_chars": trimmer.preview_chars,
            "trimmable_tools": trimmer.trimmable_tools,
            "note": "token budget not used; with fewer than recent_turns user messages nothing is trimmed",
        }

    def context(self, call: CallInput) -> list[OpenAIMessage]:
        from agents.run_config import CallModelData, ModelInputData

        instructions, items = to_response_items(call.messages)
        data = CallModelData(model_data=ModelInputData(input=items, instructions=instructions),
                             agent=None, context=None)  # the trimmer reads neither
        result = self._trimmer(data)
        return from_response_items(result.instructions, result.input)


# --------------------------------------------------------------------------- Anthropic


ANTHROPIC_PLACEHOLDER = "[tool result cleared]"
"""Anthropic documents that cleared results are replaced with placeholder text but not the text
itself; this stand-in is ours."""


@dataclass
class AnthropicClearToolUses:
    """``clear_tool_uses_20250919``, from Anthropic's context-editing documentation.

    When the input tokens (whole prompt, system included) exceed ``trigger``,
    the oldest tool results are cleared in chronological order, keeping the
    ``keep`` most recent tool uses; ``exclude_tools`` are never cleared; with
    ``clear_tool_inputs`` the call's arguments are cleared too; when the
    clearable tokens are fewer than ``clear_at_least`` nothing is cleared.
    """

    counter: TokenCounter
    trigger: int | None = 100_000
    """Input-token trigger; ``None``: the call's token budget."""
    keep: int = 3
    clear_at_least: int | None = None
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    name: str = "anthropic_clear_tool_uses"
    parameters: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.trigger is None and self.name == "anthropic_clear_tool_uses":
            self.name = "anthropic_clear_tool_uses@budget"
        self.parameters = {
            "edit": "clear_tool_uses_20250919 (server-side; reimplemented from the documentation)",
            "trigger": {"type": "input_tokens",
                        "value": self.trigger if self.trigger is not None
                        else f"the call's token budget (default {DEFAULT_BUDGET})"},
            "keep": {"type": "tool_uses", "value": self.keep},
            "clear_at_least": self.clear_at_least,
            "exclude_tools": list(self.exclude_tools),
            "clear_tool_inputs": self.clear_tool_inputs,
            "placeholder": ANTHROPIC_PLACEHOLDER,
            "input_tokens": "tiktoken, count_tokens rule, whole prompt including the system prompt",
        }

    def context(self, call: CallInput) -> list[OpenAIMessage]:
        messages = _copy(call.messages)
        trigger = _budget(call) if self.trigger is None else self.trigger
        before = count_tokens(messages, self.counter)
        if before <= trigger:
            return messages
        uses: list[tuple[int, dict[str, Any]]] = []  # (assistant index, tool call), chronological
        for index, message in enumerate(messages):
            for tool_call in message.get("tool_calls") or ():
                uses.append((index, tool_call))
        result_at = {m.get("tool_call_id"): i for i, m in enumerate(messages) if m.get("role") == "tool"}
        clearable = uses[: max(0, len(uses) - self.keep)]
        edited = _copy(messages)
        for index, tool_call in clearable:
            function = tool_call.get("function", tool_call)
            if function.get("name") in self.exclude_tools:
                continue
            at = result_at.get(tool_call.get("id"))
            if at is not None:
                edited[at] = {**edited[at], "content": ANTHROPIC_PLACEHOLDER}
            if self.clear_tool_inputs:
                calls = [dict(c) for c in edited[index]["tool_calls"]]
                for c in calls:
                    if c.get("id") == tool_call.get("id"):
                        c["function"] = {**c.get("function", {}), "arguments": "{}"}
                edited[index] = {**edited[index], "tool_calls": calls}
        if self.clear_at_least is not None and before - count_tokens(edited, self.counter) < self.clear_at_least:
            return messages
        return edited


def peer_strategies(counter: TokenCounter) -> list[Any]:
    """Every peer strategy, in table order."""
    return [
        LangChainTrim(counter),
        LangChainClearToolUses(counter),
        OpenAIToolOutputTrimmer(),
        AnthropicClearToolUses(counter),
        AnthropicClearToolUses(counter, trigger=None),
    ]
