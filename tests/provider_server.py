"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions and Anthropic Messages wire formats.

Tests send requests through the real ``openai`` and ``anthropic`` SDKs to it:
it answers each request with the next scripted :class:`Reply` (in order) and
records what arrived (:class:`Received`), so a test checks both directions of
the wire without mocking either SDK. Reply bodies are built from the SDKs' own
response types (:func:`openai_completion`, :func:`anthropic_message`), and
request bodies are checked against the SDKs' own request types
(:func:`openai_request_problems`, :func:`anthropic_request_problems`).

The server runs in a thread (``http.server``), so it answers while the test's
event loop awaits the SDK.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic import types as anthropic_types
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types import chat as openai_chat
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.completion_usage import CompletionUsage, PromptTokensDetails

NO_REPLY = {"error": {"message": "the test server has no scripted reply left", "type": "server_error"}}


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer."""

    body: dict[str, Any] | str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0
    """Wait this long before answering (to trip a client timeout)."""


@dataclass(frozen=True)
class Received:
    """One request as it arrived."""

    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: dict[str, Any]
    at: float
    """``time.monotonic()`` when it arrived."""


class ProviderServer:
    """Answers POSTs with scripted replies, in order; records every request. Use as a context manager."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                with server._lock:
                    server.received.append(Received(
                        path=self.path, headers={k.lower(): v for k, v in self.headers.items()},
                        body=json.loads(raw or b"{}"), at=time.monotonic()))
                    reply = server.replies.popleft() if server.replies else Reply(NO_REPLY, status=500)
                if reply.delay_seconds:
                    time.sleep(reply.delay_seconds)
                data = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                payload = data.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the hook's signature
                pass  # keep test output clean

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="provider-server", daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (Anthropic's base URL form)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (OpenAI's base URL form)."""
        return self.url + "/v1"

    def reply(self, *replies: Reply) -> ProviderServer:
        """Queue replies for the next requests."""
        with self._lock:
            self.replies.extend(replies)
        return self

    def __enter__(self) -> ProviderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --------------------------------------------------------------------------- replies, built from the SDKs' types


def openai_completion(content: str | None = None, tool_calls: tuple[tuple[str | None, str, str], ...] = (),
                      *, prompt_tokens: int = 100, completion_tokens: int = 10,
                      cached_tokens: int | None = None, model: str = "gpt-test") -> dict[str, Any]:
    """A chat completion as OpenAI sends it; ``tool_calls`` are ``(id, wire name, arguments JSON)``.

    An id of ``None`` leaves the call's ``id`` out, as some compatible servers do.
    """
    calls = [
        openai_chat.ChatCompletionMessageFunctionToolCall(
            id=call_id or "dropped", type="function", function={"name": name, "arguments": arguments})
        for call_id, name, arguments in tool_calls
    ]
    message = openai_chat.ChatCompletionMessage(role="assistant", content=content, tool_calls=calls or None)
    usage = CompletionUsage(
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=cached_tokens) if cached_tokens is not None else None,
    )
    completion = openai_chat.ChatCompletion(
        id="chatcmpl-test", object="chat.completion", created=1_700_000_000, model=model,
        choices=[openai_chat.chat_completion.Choice(index=0, finish_reason="tool_calls" if calls else "stop",
                                                    message=message)],
        usage=usage,
    )
    body = completion.model_dump(mode="json", exclude_unset=True)
    for (call_id, _, _), call in zip(tool_calls, body["choices"][0]["message"].get("tool_calls") or (),
                                     strict=True):
        if call_id is None:
            del call["id"]
    return body


def openai_error(status: int, message: str, *, code: str | None = None, type_: str = "invalid_request_error",
                 **fields: Any) -> dict[str, Any]:
    """An error body in OpenAI's format (``fields``: a compatible server's extras, e.g. llama.cpp's ``n_ctx``)."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code, **fields}}


def anthropic_message(blocks: list[dict[str, Any]], *, input_tokens: int = 100, output_tokens: int = 10,
                      cache_read: int | None = None, cache_write: int | None = None,
                      model: str = "claude-test") -> dict[str, Any]:
    """A Messages response as Anthropic sends it; ``blocks`` are text and tool_use content blocks."""
    message = anthropic_types.Message(
        id="msg_test", type="message", role="assistant", model=model, content=blocks,
        stop_reason="tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
        stop_sequence=None,
        usage=anthropic_types.Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                                    cache_read_input_tokens=cache_read, cache_creation_input_tokens=cache_write),
    )
    return message.model_dump(mode="json", exclude_unset=True)


def anthropic_error(message: str, type_: str = "invalid_request_error") -> dict[str, Any]:
    """An error body in Anthropic's envelope."""
    return {"type": "error", "error": {"type": type_, "message": message}}


# --------------------------------------------------------------------------- requests, checked against the SDKs' types


def shape_problems(value: object, typed: type, where: str) -> list[str]:
    """Keys of ``value`` that the SDK's request ``TypedDict`` does not know, and required keys it lacks."""
    if not isinstance(value, dict):
        return [f"{where}: not an object: {value!r}"]
    known = typed.__required_keys__ | typed.__optional_keys__  # type: ignore[attr-defined]
    # The SDKs' modules use postponed annotations, so on Python 3.11 ``Required[...]`` is only visible
    # in the annotation's text.
    required = typed.__required_keys__ | {  # type: ignore[attr-defined]
        key for key, annotation in typed.__annotations__.items() if "Required[" in str(annotation)}
    problems = [f"{where}: unknown key {key!r} for {typed.__name__}" for key in sorted(set(value) - known)]
    problems += [f"{where}: missing {key!r} of {typed.__name__}" for key in sorted(required - set(value))]
    return problems


_OPENAI_MESSAGES = {
    "system": openai_chat.ChatCompletionSystemMessageParam,
    "user": openai_chat.ChatCompletionUserMessageParam,
    "assistant": openai_chat.ChatCompletionAssistantMessageParam,
    "tool": openai_chat.ChatCompletionToolMessageParam,
}


def openai_request_problems(body: dict[str, Any]) -> list[str]:
    """What in a chat-completions request body the SDK's request types would not accept."""
    problems = shape_problems(body, CompletionCreateParamsNonStreaming, "body")
    for index, message in enumerate(body.get("messages", [])):
        typed = _OPENAI_MESSAGES.get(message.get("role"))
        if typed is None:
            problems.append(f"messages[{index}]: unknown role {message.get('role')!r}")
            continue
        problems += shape_problems(message, typed, f"messages[{index}]")
        for position, call in enumerate(message.get("tool_calls") or ()):
            problems += shape_problems(call, openai_chat.ChatCompletionMessageFunctionToolCallParam,
                                       f"messages[{index}].tool_calls[{position}]")
    for index, tool in enumerate(body.get("tools") or ()):
        problems += shape_problems(tool, openai_chat.ChatCompletionFunctionToolParam, f"tools[{index}]")
    return problems


_ANTHROPIC_TURNS = {"user": anthropic_types.UserMessageParam, "assistant": anthropic_types.AssistantMessageParam}

_ANTHROPIC_BLOCKS = {
    "text": anthropic_types.TextBlockParam,
    "tool_use": anthropic_types.ToolUseBlockParam,
    "tool_result": anthropic_types.ToolResultBlockParam,
}


def anthropic_request_problems(body: dict[str, Any]) -> list[str]:
    """What in a Messages request body the SDK's request types would not accept."""
    problems = shape_problems(body, MessageCreateParamsNonStreaming, "body")
    blocks = [(f"system[{i}]", block) for i, block in enumerate(body.get("system") or ())]
    for index, message in enumerate(body.get("messages", [])):
        typed = _ANTHROPIC_TURNS.get(message.get("role"))
        if typed is None:
            problems.append(f"messages[{index}]: role {message.get('role')!r} is not a user or assistant turn")
            continue
        problems += shape_problems(message, typed, f"messages[{index}]")
        blocks += [(f"messages[{index}].content[{i}]", block) for i, block in enumerate(message.get("content", []))]
    for where, block in blocks:
        typed = _ANTHROPIC_BLOCKS.get(block.get("type"))
        if typed is None:
            problems.append(f"{where}: unknown block type {block.get('type')!r}")
            continue
        problems += shape_problems(block, typed, where)
        if "cache_control" in block:
            problems += shape_problems(block["cache_control"], anthropic_types.CacheControlEphemeralParam,
                                       f"{where}.cache_control")
    for index, tool in enumerate(body.get("tools") or ()):
        problems += shape_problems(tool, anthropic_types.ToolParam, f"tools[{index}]")
    return problems


__all__ = [
    "ProviderServer",
    "Received",
    "Reply",
    "anthropic_error",
    "anthropic_message",
    "anthropic_request_problems",
    "openai_completion",
    "openai_error",
    "openai_request_problems",
    "shape_problems",
]
