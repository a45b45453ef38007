"""The budget: stage 7, which admitted items fit the token budget.

Items compete in :meth:`Item.sort_key` order: protected first (they always
stay, whatever they cost), then by class priority (recovery, policy,
planning, conversational, epistemic, provenance, operational), tier, newest
and id. Each kept item is charged what it adds to the rendered context: its
line and, for the first item of a section, the section title.
"""

from __future__ import annotations

from policy.enums import DecisionOutcome, MessageRole, OmissionReason
from policy.lines import BULLET, SECTION_TITLES
from policy.records import ChatMessage
from policy.selection import Item, SelectionContext
from policy.tokens import TokenCounter, count_message


def spend_budget(
    ctx: SelectionContext,
    items: list[Item],
    budget: int,
    catalog: str = "",
) -> tuple[list[Item], int]:
    """Keep items in priority order while they fit; protected items always stay.

    Args:
        ctx: the pass; its participant's system prompt is paid for first, and its ledger receives an
            included, protected, stale-marked or omitted decision for every item.
        items: everything admission and the transcript admitted.
        budget: the prefix's token budget (0 keeps protected state only).
        catalog: the skill catalog's text (:func:`policy.skills.catalog_text`), paid for with the prompt.

    Returns:
        The kept items, in priority order, and the tokens they and the
        system prompt cost.
    """
    policy, participant, counter, ledger = ctx.policy, ctx.participant, ctx.counter, ctx.ledger
    system_cost = count_message(ChatMessage(role=MessageRole.SYSTEM, content=participant.system_prompt), counter)
    if catalog:
        system_cost += count_message(ChatMessage(role=MessageRole.SYSTEM, content=catalog), counter)
    spent = system_cost
    opened: set[str] = set()
    kept: list[Item] = []
    memories = 0
    for item in sorted(items, key=Item.sort_key):
        cost = _item_cost(item, counter, opened)
        over_cap = item.section == "memory" and memories >= policy.max_memories
        if item.protected or (spent + cost <= budget and not over_cap):
            kept.append(item)
            spent += cost
            opened.add(item.section)
            memories += item.section == "memory"
            outcome = DecisionOutcome.PROTECTED if item.protected else DecisionOutcome.INCLUDED
            if item.section == "stale":
                outcome = DecisionOutcome.MARKED_STALE
            reason = "protected state" if item.protected else f"{item.record_class.value}, fits budget"
            if item.protected and spent > budget:  # kept whole, never cut: say what it costs instead
                reason = f"protected state, kept whole over the {budget}-token budget ({spent} tokens so far)"
            ledger.decide(item.section, item.ref, outcome, reason)
        else:
            why = "memory cap reached" if over_cap else f"would exceed {budget}-token budget"
            ledger.decide(item.section, item.ref, DecisionOutcome.OMITTED, why, OmissionReason.BUDGET)
    return kept, spent


def _item_cost(item: Item, counter: TokenCounter, opened: set[str]) -> int:
    """What ``item`` adds to the context, counted on the text the renderer joins (:func:`policy.lines.section`)."""
    if item.message is not None:
        return count_message(item.message, counter)
    header = 0 if item.section in opened else counter("\n" + SECTION_TITLES[item.section])
    return header + counter("\n" + BULLET + item.text)


REASSEMBLY_MARGIN = 0.9
"""Share of the provider's stated window a re-assembly aims at: counts differ between tokenizers
(the assembly's tokens are the injected counter's; the provider counts its own, and the tool schemas)."""


def reduced_budget(assembled_tokens: int, token_budget: int, limit_tokens: int | None = None,
                   prompt_tokens: int | None = None) -> int:
    """The budget to re-assemble within after a provider refused a context as too long for its window.

    The refused context was ``assembled_tokens`` (our count) under ``token_budget``;
    protected state may have pushed it over the budget, so the new budget starts
    from the smaller of the two. When the provider stated its window and the
    prompt's size (in its own tokens), the new budget scales by their ratio with
    a margin; otherwise it halves.

    Args:
        assembled_tokens: the refused assembly's size.
        token_budget: the budget it was assembled within.
        limit_tokens: the model's window, as the provider stated it.
        prompt_tokens: the refused prompt's size, as the provider counted it.

    Returns:
        A budget smaller than both ``assembled_tokens`` and ``token_budget`` (0 at least).
    """
    base = min(assembled_tokens, token_budget)
    ratio = 0.5
    if limit_tokens and prompt_tokens and prompt_tokens > limit_tokens:
        ratio = limit_tokens / prompt_tokens * REASSEMBLY_MARGIN
    return max(0, min(int(base * ratio), base - 1))
