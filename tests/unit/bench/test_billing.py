"""The price models bill what the providers' documented caching rules say, computed from token sequences."""

from __future__ import annotations

import pytest

from harness.bench.billing import (
    PRICE_MODELS,
    Prompt,
    bill_sequence,
    message_blocks,
    summarise_bills,
    transcript_breakpoints,
)
from harness.bench.strategy import count_tokens


def _block(tag: int, size: int) -> tuple[int, ...]:
    return tuple(tag * 100_000 + i for i in range(size))


def _prompt(*blocks: tuple[int, ...], breakpoints: tuple[int, ...] | None = None) -> Prompt:
    return Prompt(tuple(blocks), breakpoints if breakpoints is not None else (len(blocks) - 1,))


SYSTEM, A, B, C = _block(1, 1200), _block(2, 300), _block(3, 500), _block(4, 200)


def test_openai_reads_the_shared_prefix_from_1024_tokens_in_128_token_steps() -> None:
    bills = bill_sequence([_prompt(SYSTEM, A), _prompt(SYSTEM, A, B)], PRICE_MODELS["openai-gpt5"])
    assert bills[0].read == 0 and bills[0].cost == 1500
    # 1,500 shared tokens: 1,024 + 3 * 128 = 1,408 are a hit.
    assert bills[1].read == 1408
    assert bills[1].cost == pytest.approx(1408 * 0.1 + (2000 - 1408))


def test_a_prompt_below_the_minimum_is_never_a_hit_nor_cached() -> None:
    short = _block(5, 900)
    bills = bill_sequence([_prompt(short), _prompt(short, A)], PRICE_MODELS["openai-4o"])
    assert [b.read for b in bills] == [0, 0]
    assert bills[1].cost == 1200


def test_a_rewrite_loses_the_cache_from_the_first_changed_token() -> None:
    changed = SYSTEM[:1100] + (7,) + SYSTEM[1101:]
    bills = bill_sequence([_prompt(SYSTEM, A), _prompt(changed, A, B)], PRICE_MODELS["gemini"])
    assert bills[1].read == 1024  # 1,100 shared tokens, rounded down to the 1,024 floor
    bills = bill_sequence([_prompt(SYSTEM, A), _prompt(A, SYSTEM)], PRICE_MODELS["gemini"])
    assert bills[1].read == 0


def test_anthropic_writes_at_breakpoints_and_reads_the_longest_entry_found() -> None:
    first, second = _prompt(SYSTEM, A), _prompt(SYSTEM, A, B)
    bills = bill_sequence([first, second], PRICE_MODELS["anthropic"])
    assert (bills[0].read, bills[0].written) == (0, 1500)
    assert bills[0].cost == pytest.approx(1500 * 1.25)
    assert (bills[1].read, bills[1].written) == (1500, 500)
    assert bills[1].cost == pytest.approx(1500 * 0.1 + 500 * 1.25)


def test_anthropic_finds_no_entry_more_than_20_blocks_before_a_breakpoint() -> None:
    tail = tuple(_block(10 + i, 5) for i in range(21))
    near = bill_sequence([_prompt(SYSTEM), _prompt(SYSTEM, *tail[:20])], PRICE_MODELS["anthropic"])
    far = bill_sequence([_prompt(SYSTEM), _prompt(SYSTEM, *tail)], PRICE_MODELS["anthropic"])
    assert near[1].read == 1200
    assert far[1].read == 0
    # A breakpoint at the end of the system prompt keeps the entry in reach however long the tail grows.
    kept = bill_sequence([_prompt(SYSTEM), _prompt(SYSTEM, *tail, breakpoints=(0, 21))], PRICE_MODELS["anthropic"])
    assert kept[1].read == 1200


def test_anthropic_caches_nothing_below_its_minimum_and_bills_after_the_last_breakpoint_at_list_price() -> None:
    bills = bill_sequence([_prompt(A, B), _prompt(A, B, C)], PRICE_MODELS["anthropic"])
    assert [(b.read, b.written) for b in bills] == [(0, 0), (0, 0)]
    assert bills[1].cost == 1000
    bills = bill_sequence([_prompt(SYSTEM, A, breakpoints=(0,))], PRICE_MODELS["anthropic"])
    assert (bills[0].written, bills[0].cost) == (1200, pytest.approx(1200 * 1.25 + 300))


def test_uncached_bills_every_token_at_list_price() -> None:
    bills = bill_sequence([_prompt(SYSTEM, A), _prompt(SYSTEM, A, B)], PRICE_MODELS["uncached"])
    assert [b.cost for b in bills] == [1500, 2000] and all(b.read == 0 for b in bills)
    assert summarise_bills(bills) == {"cost": 3500, "tokens": 3500, "read": 0, "written": 0, "cache_hit_rate": 0.0,
                                      "uncached_tokens_per_call_median": 1750}


def test_message_blocks_count_like_the_benchmark_token_rule() -> None:
    messages = [
        {"role": "system", "content": "You are a careful agent."},
        {"role": "user", "content": "Find reservation ABC123."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_reservation",
                                                          "arguments": '{"reservation_id": "ABC123"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"flights": ["HAT030"]}'},
    ]
    counter_calls: list[str] = []

    def encode(text: str) -> tuple[int, ...]:
        counter_calls.append(text)
        return tuple(ord(c) for c in text)

    blocks = message_blocks(messages, encode)
    assert sum(len(b) for b in blocks) == count_tokens(messages, lambda text: len(encode(text)))
    assert transcript_breakpoints(messages) == (0, 3)


# --------------------------------------------------------------------------- cache lifetimes


def _at(at: float, *blocks: tuple[int, ...]) -> Prompt:
    return Prompt(tuple(blocks), (len(blocks) - 1,), at=at)


@pytest.mark.parametrize("name", ["anthropic", "openai-gpt5"])
def test_an_entry_unused_past_its_lifetime_is_gone(name) -> None:
    model = PRICE_MODELS[name]
    warm = bill_sequence([_at(0, SYSTEM, A), _at(299, SYSTEM, A, B)], model)
    cold = bill_sequence([_at(0, SYSTEM, A), _at(301, SYSTEM, A, B)], model)
    assert warm[1].read > 0 and cold[1].read == 0
    assert cold[1].cost > warm[1].cost


def test_a_read_refreshes_the_entry_it_hits() -> None:
    # The second request finds (SYSTEM, A) by looking back from its own breakpoint, the third the same way:
    # 500 s after the entry was written, 250 s after it was last read.
    bills = bill_sequence([_at(0, SYSTEM, A), _at(250, SYSTEM, A, B), _at(500, SYSTEM, A, C)],
                          PRICE_MODELS["anthropic"])
    assert bills[1].read == bills[2].read == len(SYSTEM) + len(A)


def test_the_longer_tiers_keep_what_the_short_ones_lose_at_their_price() -> None:
    late = [_at(0, SYSTEM, A), _at(1800, SYSTEM, A, B)]
    short, long = bill_sequence(late, PRICE_MODELS["anthropic"]), bill_sequence(late, PRICE_MODELS["anthropic-1h"])
    assert short[1].read == 0 and long[1].read == len(SYSTEM) + len(A)
    # The 1-hour tier writes at 2x: the first request costs more, and being read later is what repays it.
    assert long[0].cost == pytest.approx(2.0 * long[0].written) and long[0].cost > short[0].cost
    assert sum(b.cost for b in long) < sum(b.cost for b in short)
    extended = bill_sequence(late, PRICE_MODELS["openai-gpt5-24h"])
    in_memory = bill_sequence(late, PRICE_MODELS["openai-gpt5"])
    assert extended[0].cost == in_memory[0].cost and extended[1].read > 0 == in_memory[1].read


def test_prompts_without_a_time_are_within_every_lifetime() -> None:
    untimed = [_prompt(SYSTEM, A), _prompt(SYSTEM, A, B)]
    for model in PRICE_MODELS.values():
        assert bill_sequence(untimed, model) == bill_sequence([_at(0, SYSTEM, A), _at(1, SYSTEM, A, B)], model)


def test_a_request_may_ask_for_anthropics_longer_tier() -> None:
    """Dossier asks for 1-hour entries when its calls come late (policy.epochs.longer_cache_tier)."""
    model = PRICE_MODELS["anthropic"]
    asked = [Prompt((SYSTEM, A), (1,), at=0, long_tier=True), _at(1800, SYSTEM, A, B)]
    bills = bill_sequence(asked, model)
    assert bills[0].cost == pytest.approx(2.0 * bills[0].written)
    assert bills[1].read == len(SYSTEM) + len(A)
    # The automatic models have no such tier: the request is billed as any other.
    assert bill_sequence(asked, PRICE_MODELS["openai-gpt5"])[1].read == 0
