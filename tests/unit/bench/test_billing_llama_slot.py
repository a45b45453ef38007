"""The llama.cpp slot rule: reuse is the prefix shared with the previous prompt only, minus the last token.

``dossier bench cache-check`` compares this rule with what the embedded
server reports (``timings.cache_n``); these tables pin the rule itself.
"""

from __future__ import annotations

import pytest

from harness.bench.billing import LLAMA_CPP_SLOT, PRICE_MODELS, Prompt, bill_sequence


def _block(tag: int, size: int) -> tuple[int, ...]:
    return tuple(tag * 100_000 + i for i in range(size))


def _prompt(*blocks: tuple[int, ...]) -> Prompt:
    return Prompt(tuple(blocks))


SYSTEM, A, B, C = _block(1, 40), _block(2, 30), _block(3, 50), _block(4, 20)


def _reads(*prompts: Prompt) -> list[int]:
    return [bill.read for bill in bill_sequence(prompts, LLAMA_CPP_SLOT)]


@pytest.mark.parametrize(("prompts", "reads"), [
    # A growing transcript: each request reuses the whole previous prompt, however short (no minimum).
    ((_prompt(SYSTEM, A), _prompt(SYSTEM, A, B), _prompt(SYSTEM, A, B, C)), [0, 70, 120]),
    # The same prompt twice: everything but the last token, which is evaluated again for its logits.
    ((_prompt(SYSTEM, A), _prompt(SYSTEM, A)), [0, 69]),
    # A rewrite in the middle: the prefix up to the first changed token.
    ((_prompt(SYSTEM, A, B), _prompt(SYSTEM, C, B)), [0, 40]),
    # Only the previous prompt counts: after an unrelated request, the earlier prefix is gone from the slot.
    ((_prompt(SYSTEM, A), _prompt(C), _prompt(SYSTEM, A, B)), [0, 0, 0]),
    # Shared beyond the previous prompt's end is impossible: at most the previous prompt's length.
    ((_prompt(SYSTEM), _prompt(SYSTEM, A)), [0, 40]),
])
def test_the_slot_reuses_the_prefix_shared_with_the_previous_prompt(prompts: tuple[Prompt, ...],
                                                                    reads: list[int]) -> None:
    assert _reads(*prompts) == reads


def test_a_prefix_inside_a_block_counts_to_the_token() -> None:
    changed = A[:17] + (9,) + A[18:]
    assert _reads(_prompt(SYSTEM, A), _prompt(SYSTEM, changed)) == [0, 57]


def test_cost_is_the_tokens_the_server_evaluates() -> None:
    bills = bill_sequence([_prompt(SYSTEM, A), _prompt(SYSTEM, A, B)], LLAMA_CPP_SLOT)
    assert [(b.tokens, b.read, b.uncached, b.cost) for b in bills] == [(70, 0, 70, 70.0), (120, 70, 50, 50.0)]


def test_the_unbounded_provider_models_still_read_from_any_earlier_prompt() -> None:
    """The slot limit is the llama.cpp model's alone: OpenAI's cache still finds an older prefix."""
    long_system = _block(5, 1200)
    sequence = [_prompt(long_system, A), _prompt(C), _prompt(long_system, A, B)]
    assert [b.read for b in bill_sequence(sequence, PRICE_MODELS["openai-gpt5"])] == [0, 0, 1152]
    assert _reads(*sequence) == [0, 0, 0]


def test_the_slot_model_is_not_billed_by_the_traces_benchmark() -> None:
    assert LLAMA_CPP_SLOT.name not in PRICE_MODELS
    assert LLAMA_CPP_SLOT.parameters()["slots"] == 1 and "slots" not in PRICE_MODELS["openai-gpt5"].parameters()
