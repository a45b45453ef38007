"""The billed-cost simulation's cache predictions, checked against a real llama.cpp server.

:mod:`harness.bench.billing` predicts, from cl100k token sequences, how much of
each prompt a provider serves from its prefix cache. Nothing in the traces
benchmark observes a real cache, so this check sends the same prompts to the
embedded model server (llama.cpp, one slot, ``cache_prompt`` on) and compares:

* the prediction of :data:`harness.bench.billing.LLAMA_CPP_SLOT` on the
  benchmark's own token sequences (cl100k, 4 framing tokens per message) with
  the tokens the server reports it reused (``timings.cache_n``), as shares of
  each prompt, because the two tokenizers count differently;
* the same rule applied to the server's own token sequences (its chat template
  rendered by ``/apply-template``, tokenized by ``/tokenize``), which must
  match ``cache_n`` to the token if the rule is what the server does.

The prompts are the ones :func:`harness.bench.traces.run_trace` accounts (its
``observe`` hook), for trajectories whose every prompt fits ``max_prompt_tokens``.
Each strategy's calls of a trajectory are sent back to back, so from a
sequence's second call on the slot holds that sequence's previous prompt, as
the simulation assumes; a first call finds whatever the previous sequence
left (often a shared system prompt) and is reported apart. The report is in
:mod:`harness.bench.cache_check_report`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from activities.deps import GraphDeps
from activities.tokens import token_encoder
from dossier.runtime import open_graph
from dossier.services import ensure_services
from dossier.settings import Settings
from harness.bench.billing import LLAMA_CPP_SLOT, Encode, Prompt, bill_sequence, message_blocks
from harness.bench.cache_check_report import STRATEGIES, CacheCheckReport, Sent
from harness.bench.strategy import count_tokens
from harness.bench.traces import load_traces, run_trace
from harness.bench.traces_measure import to_openai, trace_calls
from store import conversations

Progress = Callable[[str], None]


class CacheCheckError(RuntimeError):
    """The model server refused or failed a request (its status and message are in the text)."""


def candidates(traces: Sequence[dict[str, Any]], counter, max_prompt_tokens: int, max_calls: int) -> list[int]:
    """Indexes of trajectories whose whole transcript fits, in a deterministic mixed order.

    Sources alternate, and within a source its (domain, agent model) groups
    alternate, each in file order, so a small sample is not one model on one
    task family. The whole transcript bounds every replay prompt; Dossier's
    prompts are checked after assembly (:func:`collect`).
    """
    by_source: dict[str, dict[tuple[str, str], list[int]]] = {}
    for index, trace in enumerate(traces):
        calls = len(trace_calls(trace["messages"]))
        if 2 <= calls <= max_calls and count_tokens(to_openai(trace["messages"]), counter) <= max_prompt_tokens:
            meta = trace.get("meta") or {}
            group = (str(meta.get("domain", "")), str(meta.get("agent_model", "")))
            by_source.setdefault(trace.get("source", ""), {}).setdefault(group, []).append(index)
    return _interleave([_interleave(list(groups.values())) for _, groups in sorted(by_source.items())])


def _interleave(queues: Sequence[Sequence[int]]) -> list[int]:
    """Round-robin over ``queues``: the first of each, then the second of each, ..."""
    longest = max((len(queue) for queue in queues), default=0)
    return [queue[i] for i in range(longest) for queue in queues if i < len(queue)]


async def collect(deps: GraphDeps, account_id: str, traces: Sequence[dict[str, Any]], order: Sequence[int],
                  wanted: int, max_prompt_tokens: int, progress: Progress = lambda _: None) -> list[list[Sent]]:
    """Import trajectories in ``order`` and keep the first ``wanted`` whose every prompt fits.

    Returns:
        Per kept trajectory, its requests grouped by strategy (:data:`STRATEGIES` order), calls in order.
    """
    kept: list[list[Sent]] = []
    for index in order:
        if len(kept) >= wanted:
            break
        trace = traces[index]
        sent: dict[str, list[list[dict[str, Any]]]] = {name: [] for name in STRATEGIES}

        def observe(name: str, messages: list[dict[str, Any]], sent=sent) -> None:
            if name in sent:
                sent[name].append([dict(message) for message in messages])

        await run_trace(deps, account_id, trace, peers=[], observe=observe)
        sizes = [count_tokens(messages, deps.counter) for name in STRATEGIES for messages in sent[name]]
        if max(sizes, default=0) > max_prompt_tokens:
            progress(f"cache-check: {trace.get('id')}: a prompt of {max(sizes)} tokens, skipped")
            continue
        kept.append([Sent(trace.get("id", ""), name, k, messages, bench_tokens=count_tokens(messages, deps.counter))
                     for name in STRATEGIES for k, messages in enumerate(sent[name])])
    return kept


def predict(requests: Sequence[Sent], encode: Encode) -> None:
    """Fill ``predicted_cached``: the slot rule on each strategy's own sequence, as the simulation bills it."""
    for name in STRATEGIES:
        sequence = [r for r in requests if r.strategy == name]
        prompts = [Prompt(message_blocks(r.messages, encode)) for r in sequence]
        for request, bill in zip(sequence, bill_sequence(prompts, LLAMA_CPP_SLOT), strict=True):
            request.predicted_cached = bill.read


class LlamaServer:
    """The few llama.cpp server endpoints the check needs (chat completions, template, tokenizer)."""

    def __init__(self, base_url: str, model: str, timeout: float = 900.0) -> None:
        """``base_url`` is the OpenAI-compatible one (``http://127.0.0.1:PORT/v1``)."""
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        # No proxy from the environment: the server is on loopback.
        self.client = httpx.AsyncClient(timeout=timeout, trust_env=False)

    async def close(self) -> None:
        await self.client.aclose()

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = await self.client.post(self.root + path, json=body)
        except httpx.HTTPError as error:
            raise CacheCheckError(f"model server {self.root}{path}: {error!r}") from error
        if response.status_code != 200:
            raise CacheCheckError(f"model server {self.root}{path}: HTTP {response.status_code}: {response.text[:300]}")
        return response.json()

    async def tokens(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        """The prompt's tokens as the server builds them: its chat template, then its tokenizer."""
        prompt = (await self._post("/apply-template", {"messages": list(messages)}))["prompt"]
        return (await self._post("/tokenize", {"content": prompt, "add_special": True}))["tokens"]

    async def complete(self, messages: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """One chat completion of one token at temperature 0, reusing the slot's cache."""
        return await self._post("/v1/chat/completions", {
            "model": self.model, "messages": list(messages), "max_tokens": 1, "temperature": 0,
            "cache_prompt": True})


ANY_EARLIER = replace(LLAMA_CPP_SLOT, name="llama-cpp-any-earlier", slots=0)
"""The slot rule but with every earlier prompt as a candidate: what llama.cpp's RAM prompt cache (``cache_ram``)
can add when a request shares little with the slot and the server restores an older prompt instead."""

WARM_UP = [{"role": "user", "content": "cache-check: a first request, so the slot's content is known."}]
"""Sent before the sample: the rule on the server's tokens then knows what the slot held before the first call."""


async def send_all(server: LlamaServer, trajectories: Sequence[Sequence[Sent]],
                   progress: Progress = lambda _: None) -> list[Sent]:
    """Send every request in order, record what the server reports, then apply the rule to its tokens."""
    done: list[Sent] = []
    server_prompts: list[Prompt] = [Prompt((tuple(await server.tokens(WARM_UP)),))]
    await server.complete(WARM_UP)
    for requests in trajectories:
        for request in requests:
            server_prompts.append(Prompt((tuple(await server.tokens(request.messages)),)))
            started = time.perf_counter()
            response = await server.complete(request.messages)
            request.seconds = time.perf_counter() - started
            usage, timings = response.get("usage") or {}, response.get("timings") or {}
            request.server_tokens = int(usage.get("prompt_tokens", 0))
            request.server_cached = int(timings.get("cache_n", 0))
            request.server_evaluated = int(timings.get("prompt_n", 0))
            request.usage_cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
            request.tokenized = server_prompts[-1].tokens
            done.append(request)
            progress(f"cache-check: {request.trajectory} {request.strategy} call {request.call}: "
                     f"{request.server_cached}/{request.server_tokens} reused, {request.seconds:.1f} s")
    # The server has one slot: the rule runs over everything it was sent, in order (the warm-up first).
    slot, any_earlier = bill_sequence(server_prompts, LLAMA_CPP_SLOT), bill_sequence(server_prompts, ANY_EARLIER)
    for request, bill, other in zip(done, slot[1:], any_earlier[1:], strict=True):
        request.rule_cached, request.rule_any_cached = bill.read, other.read
    return done


async def check_with(deps: GraphDeps, server: LlamaServer, traces: Sequence[dict[str, Any]], encode: Encode, *,
                     trajectories: int, max_prompt_tokens: int, max_calls: int,
                     progress: Progress = lambda _: None) -> CacheCheckReport:
    """Sample, predict and send: the whole check on existing graph dependencies and a running server.

    Raises:
        CacheCheckError: the server failed a request.
    """
    async with deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="bench cache-check")
    started = time.perf_counter()
    order = candidates(traces, deps.counter, max_prompt_tokens, max_calls)
    sample = await collect(deps, account_id, traces, order, trajectories, max_prompt_tokens, progress)
    for requests in sample:
        predict(requests, encode)
    done = await send_all(server, sample, progress)
    parameters = {
        "server": {"model": server.model, "slots": 1, "cache_prompt": True, "max_tokens": 1, "temperature": 0},
        "rule": LLAMA_CPP_SLOT.parameters(),
        "sample": {"trajectories": len(sample), "max_prompt_tokens": max_prompt_tokens, "max_calls": max_calls,
                   "order": "sources alternate, then (domain, agent model) groups, each in file order",
                   "strategies": list(STRATEGIES)},
        "policy": deps.policy.version,
    }
    return CacheCheckReport(requests=done, parameters=parameters, seconds=time.perf_counter() - started)


async def run_cache_check(settings: Settings, path: str | Path, *, trajectories: int = 8,
                          max_prompt_tokens: int = 3000, max_calls: int = 8,
                          progress: Progress = lambda _: None) -> CacheCheckReport:
    """Start (or reuse) the graph services and the embedded model server, then run :func:`check_with`.

    Args:
        settings: the configuration (``LOCAL_MODEL_URL`` names an external server instead).
        path: a JSONL file in the traces README's format.
        trajectories: how many trajectories to sample.
        max_prompt_tokens: the largest prompt (benchmark tokens) a sampled trajectory may send.
        max_calls: the most model calls a sampled trajectory may have (bounds the run time).
        progress: called with a line per request.
    """
    traces = load_traces(path)
    endpoints = await asyncio.to_thread(ensure_services, settings, ["llm"])
    if endpoints.llm_url is None or endpoints.llm_model is None:
        raise CacheCheckError("no model server: the 'llm' service gave no URL")
    server = LlamaServer(endpoints.llm_url, endpoints.llm_model)
    try:
        async with open_graph(settings) as deps:
            return await check_with(deps, server, traces, token_encoder(settings.tiktoken_encoding),
                                    trajectories=trajectories, max_prompt_tokens=max_prompt_tokens,
                                    max_calls=max_calls, progress=progress)
    finally:
        await server.close()


__all__ = ["CacheCheckError", "LlamaServer", "candidates", "check_with", "collect", "predict", "run_cache_check",
           "send_all"]
