"""What a provider route bills for prompt tokens that repeat a cached prefix, relative to its input price.

The minimal table the runtime's what-if needs (:mod:`policy.explain`): every
price is a multiple of the route's input price, so a cost is in input-price
units (1.0 = one uncached input token). The benchmark's richer price models
(breakpoints, write prices, step sizes) stay in ``harness/bench/billing.py``;
the numbers here are the same providers' documented cache-read prices.

Not modelled: output tokens, and Anthropic's cache-write surcharge (1.25x on
the tokens written at a breakpoint). A route the table does not know is billed
uncached: every token at 1.0.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CachePrice:
    """How one route bills a prompt prefix it has seen recently."""

    read: float
    """A cached token's price, as a multiple of the input price."""
    min_tokens: int
    """The shortest prefix the provider caches."""
    source: str = ""


UNCACHED = CachePrice(read=1.0, min_tokens=0, source="list input price, no caching")

ROUTE_PRICES: dict[str, CachePrice] = {
    "anthropic": CachePrice(0.1, 1024, "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"),
    "openai": CachePrice(0.5, 1024, "https://developers.openai.com/api/docs/guides/prompt-caching (GPT-4o generation)"),
    "local": UNCACHED,
    "scripted": UNCACHED,
}
"""Cache-read price by provider route (the route names of :class:`policy.policy.ContextPolicy`)."""


def price_for_route(route: str) -> CachePrice:
    """The route's cache price; an unknown route is billed uncached."""
    return ROUTE_PRICES.get(route, UNCACHED)


__all__ = ["ROUTE_PRICES", "UNCACHED", "CachePrice", "price_for_route"]
