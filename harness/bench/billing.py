"""What a provider bills for a sequence of prompts, under its documented prompt-caching rules.

Every major provider bills a prompt prefix it has seen recently at a fraction
of the input price. Which prefix counts as seen, and at what price, differs:

* ``anthropic`` — explicit ``cache_control`` breakpoints (at most 4 per request).
  A request writes a cache entry at each breakpoint whose prefix has at least the
  model's minimum cacheable length; a later request reads the longest entry it
  finds at one of its own breakpoints or at a block boundary up to 20 blocks
  before one ("automatic prefix checking"). Reads cost 0.1x the input price,
  the tokens written up to the last breakpoint 1.25x (5-minute entries), tokens
  after the last breakpoint 1x. Source:
  https://platform.claude.com/docs/en/build-with-claude/prompt-caching
* ``openai-gpt5`` / ``openai-4o`` — automatic: a prompt of 1,024 tokens or more
  is cached, and a later prompt reads the longest prefix it shares with an
  earlier one, from 1,024 tokens in increments of 128; cached input costs 0.1x
  (GPT-5 generation) or 0.5x (GPT-4o generation), nothing is charged for
  writing. Source: https://developers.openai.com/api/docs/guides/prompt-caching
* ``gemini`` — implicit caching: a prefix of at least 1,024 tokens (Gemini 2.5
  Flash) shared with an earlier prompt is read at 0.25x; no write charge. Source:
  https://ai.google.dev/gemini-api/docs/caching (implicit caching). The
  granularity of a hit is not documented; 128-token steps are assumed, as for OpenAI.
* ``uncached`` — every input token at 1x.
* ``llama-cpp-slot`` (:data:`LLAMA_CPP_SLOT`, not one of :data:`PRICE_MODELS`: it bills
  nothing, it predicts what a llama.cpp server with one slot and ``cache_prompt``
  reuses, which ``dossier bench cache-check`` compares with the embedded server's
  own ``timings.cache_n``) — the slot keeps only the previous request's prompt, so
  a request reuses the longest token prefix it shares with that one prompt, from
  the first token and with no minimum; the last token of a prompt is always
  evaluated again (its logits give the next token). A reused token costs 0 here
  and an evaluated one 1, so ``cost`` is the tokens the server computes.

Cache lifetimes (``ttl_seconds``), applied when a prompt carries its time
(:attr:`Prompt.at`): an entry not used for longer than its model's lifetime is
gone, so the next request writes (or, automatic caching, processes) it anew; a
read refreshes the entry it hits. Anthropic sells two tiers: 5-minute entries
written at 1.25x (``anthropic``) and 1-hour entries written at 2x
(``anthropic-1h``), reads 0.1x either way; OpenAI keeps a prefix 5-10 minutes of
inactivity in memory (5 assumed, ``openai-gpt5``) or up to 24 hours with extended
retention at the same price (``openai-gpt5-24h``,
https://developers.openai.com/api/docs/guides/prompt-caching#extended-prompt-cache-retention).
Gemini's implicit-cache lifetime is not documented: none is applied.

Assumptions, the same for every strategy: a prompt without a time happens
within the cache lifetime of the previous ones; requests of one participant reach the
same cache (OpenAI routes by the first ~256 tokens and ``prompt_cache_key``);
a message is one content block; the request's token sequence is the cl100k
tokens of each message's content and tool calls with 4 framing tokens per
message, so a prompt's length here equals :func:`harness.bench.strategy.count_tokens`;
tool schemas are not part of the prompt (the trajectories carry none). Output
tokens are not billed here: only input.

A strategy that rewrites history (clearing, trimming, re-assembling) loses the
cache from the first token it changes: that is computed from the token
sequences, not assumed.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from harness.bench.strategy import OpenAIMessage, tool_call_texts
from policy.records import canonical_json

Encode = Callable[[str], tuple[int, ...]]
"""Text -> token ids (tiktoken's ``encode_ordinary``)."""

_ROLE_MARK = {"system": -11, "user": -12, "assistant": -13, "tool": -14}
_FRAME = (-1, -2, -3)
"""With the role mark, the 4 tokens a chat API adds around each message (the count rule's overhead)."""


@dataclass(frozen=True)
class PriceModel:
    """How one provider bills prompt tokens, relative to its base input price (1.0)."""

    name: str
    read: float
    """Price of a cached token read, as a multiple of the input price."""
    write: float
    """Price of a token written to the cache (explicit caching), as a multiple of the input price."""
    min_tokens: int
    """Shortest prefix the provider caches."""
    step: int
    """Granularity of a hit beyond ``min_tokens`` (1: exact)."""
    explicit: bool
    """Cache entries only at the request's breakpoints (Anthropic), not every prefix."""
    lookback_blocks: int = 0
    """How many blocks before a breakpoint a hit is still found (explicit caching)."""
    source: str = ""
    """The provider's documentation the rules come from."""
    slots: int = 0
    """How many of the latest earlier prompts a request can share a prefix with (0: every earlier one; 1: a
    server slot, which holds only the previous prompt)."""
    fresh_tail: int = 0
    """Tokens at the end of a prompt evaluated anew even when cached (llama.cpp: 1, for the next token's logits)."""
    ttl_seconds: float | None = None
    """How long an entry lives after its last use (``None``: as long as the trajectory)."""
    long_ttl_seconds: float | None = None
    """The longer tier a request may ask for (:attr:`Prompt.long_tier`; explicit caching only)."""
    long_write: float | None = None
    """The longer tier's write price."""

    def parameters(self) -> dict[str, Any]:
        """The parameters, as printed with the results."""
        out: dict[str, Any] = {
            "read": self.read, "write": self.write, "min_tokens": self.min_tokens, "step": self.step,
            "breakpoints": "explicit (system prompt, strategy's own, last message)" if self.explicit
            else ("none" if self.read == 1.0 else "automatic prefix"),
            "lookback_blocks": self.lookback_blocks, "source": self.source}
        if self.ttl_seconds is not None:
            out["ttl_seconds"] = self.ttl_seconds
        if self.long_ttl_seconds is not None:
            out.update(long_ttl_seconds=self.long_ttl_seconds, long_write=self.long_write)
        if self.slots:  # only the server-slot model has these: the providers' printed parameters stay as they were
            out.update(slots=self.slots, fresh_tail=self.fresh_tail)
        return out


PRICE_MODELS: dict[str, PriceModel] = {
    "anthropic": PriceModel("anthropic", read=0.1, write=1.25, min_tokens=1024, step=1, explicit=True,
                            lookback_blocks=20, ttl_seconds=300, long_ttl_seconds=3600, long_write=2.0,
                            source="https://platform.claude.com/docs/en/build-with-claude/prompt-caching "
                                   "(Claude Sonnet 4.5 minimum; 5-minute entries, 1-hour ones on request)"),
    "anthropic-1h": PriceModel("anthropic-1h", read=0.1, write=2.0, min_tokens=1024, step=1, explicit=True,
                               lookback_blocks=20, ttl_seconds=3600,
                               source="https://platform.claude.com/docs/en/build-with-claude/prompt-caching "
                                      "(1-hour cache duration: writes at 2x)"),
    "openai-gpt5": PriceModel("openai-gpt5", read=0.1, write=1.0, min_tokens=1024, step=128, explicit=False,
                              ttl_seconds=300,
                              source="https://developers.openai.com/api/docs/guides/prompt-caching "
                                     "(in-memory retention: 5-10 minutes of inactivity)"),
    "openai-gpt5-24h": PriceModel("openai-gpt5-24h", read=0.1, write=1.0, min_tokens=1024, step=128,
                                  explicit=False, ttl_seconds=86_400,
                                  source="https://developers.openai.com/api/docs/guides/prompt-caching "
                                         "(extended retention, prompt_cache_retention=24h, same price)"),
    "openai-4o": PriceModel("openai-4o", read=0.5, write=1.0, min_tokens=1024, step=128, explicit=False,
                            ttl_seconds=300, source="https://developers.openai.com/api/docs/guides/prompt-caching"),
    "gemini": PriceModel("gemini", read=0.25, write=1.0, min_tokens=1024, step=128, explicit=False,
                         source="https://ai.google.dev/gemini-api/docs/caching (implicit; 2.5 Flash minimum; "
                                "128-token steps assumed)"),
    "uncached": PriceModel("uncached", read=1.0, write=1.0, min_tokens=0, step=1, explicit=False,
                           source="list input price, no caching"),
}
"""The seven price models every strategy is billed under."""

LLAMA_CPP_SLOT = PriceModel(
    "llama-cpp-slot", read=0.0, write=1.0, min_tokens=0, step=1, explicit=False, slots=1, fresh_tail=1,
    source="llama.cpp server, one slot (n_parallel=1), cache_prompt on: the slot's KV cache is the previous "
           "prompt; checked against the embedded server by `dossier bench cache-check`")
"""A local llama.cpp server's prompt reuse, as a price model whose cost is the tokens it evaluates."""


@dataclass(frozen=True)
class Prompt:
    """One request as a provider tokenises it: a token tuple per block, and where the breakpoints are."""

    blocks: tuple[tuple[int, ...], ...]
    """Each message's tokens (framing included)."""
    breakpoints: tuple[int, ...] = ()
    """Block indexes carrying ``cache_control`` (explicit caching), ascending."""
    at: float | None = None
    """When the request is sent, in seconds on the trajectory's clock (``None``: within every cache lifetime)."""
    long_tier: bool = False
    """The request's breakpoints ask for the model's longer tier (Anthropic's ``"ttl": "1h"``)."""

    @property
    def tokens(self) -> int:
        """The prompt's length."""
        return sum(len(block) for block in self.blocks)


@dataclass(frozen=True)
class Bill:
    """What one request costs under one price model, in input-price units."""

    tokens: int
    read: int
    """Tokens served from the cache."""
    written: int
    """Tokens written to the cache at the write price (explicit caching)."""
    cost: float

    @property
    def uncached(self) -> int:
        """Tokens the provider processed anew (the latency proxy)."""
        return self.tokens - self.read


def message_blocks(messages: Sequence[OpenAIMessage], encode: Encode) -> tuple[tuple[int, ...], ...]:
    """Each OpenAI message as the token block a provider sees (see the module docstring)."""
    return tuple(_block(_message_key(message), encode) for message in messages)


@lru_cache(maxsize=65_536)
def _block(key: tuple[str, str, str], encode: Encode) -> tuple[int, ...]:
    """One message's tokens: the role mark and framing, content, then each call's name and arguments."""
    role, content, calls = key
    tokens: list[int] = [_ROLE_MARK.get(role, -15), *_FRAME]
    if content:
        tokens += encode(content)
    for name, arguments in json.loads(calls):
        tokens += encode(name)
        tokens += encode(arguments)
    return tuple(tokens)


def _message_key(message: OpenAIMessage) -> tuple[str, str, str]:
    calls = tool_call_texts(message)
    return message.get("role", "user"), message.get("content") or "", canonical_json(calls)


def transcript_breakpoints(messages: Sequence[OpenAIMessage]) -> tuple[int, ...]:
    """The documented multi-turn pattern: end of the system prompt, and the last message."""
    points = []
    leading = 0
    while leading < len(messages) and messages[leading].get("role") == "system":
        leading += 1
    if leading:
        points.append(leading - 1)
    if messages:
        points.append(len(messages) - 1)
    return tuple(sorted(set(points)))


def _common_prefix(a: Prompt, b: Prompt) -> int:
    """Tokens two prompts share from the start (whole blocks compared first, then the first differing one)."""
    shared = 0
    for left, right in zip(a.blocks, b.blocks):
        if left == right:
            shared += len(left)
            continue
        for x, y in zip(left, right):
            if x != y:
                break
            shared += 1
        break
    return shared


@dataclass
class _Cache:
    """What a provider has cached for one participant so far."""

    prompts: list[Prompt] = field(default_factory=list)
    used: list[float | None] = field(default_factory=list)
    """When each of ``prompts`` was last sent or read from."""
    entries: dict[int, tuple[float | None, float | None]] = field(default_factory=dict)
    """Explicit caching: hashes of the block prefixes written at breakpoints -> (when last used, lifetime)."""

    @staticmethod
    def alive(last_used: float | None, ttl: float | None, at: float | None) -> bool:
        """Whether an entry of lifetime ``ttl`` last used at ``last_used`` is still cached at ``at``."""
        return ttl is None or at is None or last_used is None or at - last_used <= ttl


def _prefix_hashes(prompt: Prompt) -> list[tuple[int, int]]:
    """(hash, token position) after each block."""
    out = []
    running = 0
    position = 0
    for block in prompt.blocks:
        running = hash((running, block))
        position += len(block)
        out.append((running, position))
    return out


def bill_sequence(prompts: Sequence[Prompt], model: PriceModel) -> list[Bill]:
    """What each request of one participant's sequence costs, in order.

    Args:
        prompts: the requests, oldest first.
        model: the price model.

    Returns:
        One :class:`Bill` per request.
    """
    cache = _Cache()
    bills: list[Bill] = []
    for prompt in prompts:
        bills.append(_bill_explicit(prompt, model, cache) if model.explicit else _bill_automatic(prompt, model, cache))
    return bills


def _bill_automatic(prompt: Prompt, model: PriceModel, cache: _Cache) -> Bill:
    total = prompt.tokens
    read = 0
    if model.read < 1.0:
        start = max(0, len(cache.prompts) - model.slots) if model.slots else 0
        live = [i for i in range(start, len(cache.prompts))
                if cache.alive(cache.used[i], model.ttl_seconds, prompt.at)]
        hits = [(min(_common_prefix(prompt, cache.prompts[i]), cache.prompts[i].tokens), i) for i in live]
        shared, source = max(hits, default=(0, -1))
        shared = min(shared, max(0, total - model.fresh_tail))
        if shared >= model.min_tokens:
            read = model.min_tokens + (shared - model.min_tokens) // model.step * model.step
            if source >= 0:
                cache.used[source] = prompt.at
        if total >= model.min_tokens:
            cache.prompts.append(prompt)
            cache.used.append(prompt.at)
            if model.slots:
                del cache.prompts[:-model.slots]
                del cache.used[:-model.slots]
    return Bill(tokens=total, read=read, written=0, cost=read * model.read + (total - read))


def _bill_explicit(prompt: Prompt, model: PriceModel, cache: _Cache) -> Bill:
    total = prompt.tokens
    prefixes = _prefix_hashes(prompt)
    read = 0
    hit = None
    for point in prompt.breakpoints:
        for block in range(point, max(-1, point - model.lookback_blocks - 1), -1):
            digest, position = prefixes[block]
            if digest in cache.entries and cache.alive(*cache.entries[digest], prompt.at):
                if position > read:
                    read, hit = position, digest
                break
    if hit is not None:
        cache.entries[hit] = (prompt.at, cache.entries[hit][1])  # a read refreshes the entry
    long = prompt.long_tier and model.long_ttl_seconds is not None
    ttl, write = (model.long_ttl_seconds, model.long_write or model.write) if long else (model.ttl_seconds, model.write)
    last = prefixes[prompt.breakpoints[-1]][1] if prompt.breakpoints else 0
    written = max(0, last - read) if last >= model.min_tokens else 0
    for point in prompt.breakpoints:
        digest, position = prefixes[point]
        if position >= model.min_tokens:
            cache.entries[digest] = (prompt.at, ttl)
    plain = total - read - written
    return Bill(tokens=total, read=read, written=written, cost=read * model.read + written * write + plain)


def billed_ratios(replay: Sequence[Prompt], strategy: Sequence[Prompt]) -> dict[str, dict[str, float]]:
    """One participant's two request sequences billed under every price model: the strategy's cost over
    full replay's, and both cache hit rates."""
    out: dict[str, dict[str, float]] = {}
    for name, model in PRICE_MODELS.items():
        ours, theirs = summarise_bills(bill_sequence(strategy, model)), summarise_bills(bill_sequence(replay, model))
        out[name] = {
            "cost_ratio_vs_cached_replay": round(ours["cost"] / theirs["cost"], 4) if theirs["cost"] else 0.0,
            "cache_hit_rate": ours["cache_hit_rate"],
            "replay_cache_hit_rate": theirs["cache_hit_rate"],
        }
    return out


def summarise_bills(bills: Sequence[Bill]) -> dict[str, float | int]:
    """Totals of a set of bills (cost, tokens, reads, the median uncached tokens per call)."""
    tokens = sum(b.tokens for b in bills)
    return {
        "cost": round(sum(b.cost for b in bills), 3),
        "tokens": tokens,
        "read": sum(b.read for b in bills),
        "written": sum(b.written for b in bills),
        "cache_hit_rate": round(sum(b.read for b in bills) / tokens, 4) if tokens else 0.0,
        "uncached_tokens_per_call_median": statistics.median(b.uncached for b in bills) if bills else 0,
    }


__all__ = [
    "LLAMA_CPP_SLOT",
    "PRICE_MODELS",
    "Bill",
    "PriceModel",
    "Prompt",
    "bill_sequence",
    "billed_ratios",
    "message_blocks",
    "summarise_bills",
    "transcript_breakpoints",
]
