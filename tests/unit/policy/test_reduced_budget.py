"""The budget a context is re-assembled within after a provider refused it as too long."""

from __future__ import annotations

import pytest

from policy.budget import REASSEMBLY_MARGIN, reduced_budget


@pytest.mark.parametrize(("assembled", "budget", "limit", "prompt", "expected"), [
    # The provider's stated window and prompt size scale the smaller of the two, with a margin.
    (9000, 12000, 8192, 10000, int(9000 * 8192 / 10000 * REASSEMBLY_MARGIN)),
    # Protected state pushed the context past its budget: start from the budget, not the context.
    (16000, 8192, 8192, 17500, int(8192 * 8192 / 17500 * REASSEMBLY_MARGIN)),
    # Nothing stated (or nonsense: a prompt within the window): halve.
    (9000, 12000, None, None, 4500),
    (9000, 12000, 8192, None, 4500),
    (9000, 12000, 8192, 8000, 4500),
    (1, 8192, None, None, 0),
    (0, 8192, 4096, 5000, 0),
])
def test_reduced_budget(assembled: int, budget: int, limit: int | None, prompt: int | None, expected: int) -> None:
    assert reduced_budget(assembled, budget, limit, prompt) == expected


@pytest.mark.parametrize(("assembled", "budget", "limit", "prompt"), [
    (9000, 12000, 8192, 9001), (200, 8192, None, None), (3, 3, 100, 101), (8192, 8192, 131072, 131073)])
def test_the_new_budget_is_always_smaller_than_what_was_refused(assembled: int, budget: int, limit: int | None,
                                                                 prompt: int | None) -> None:
    assert 0 <= reduced_budget(assembled, budget, limit, prompt) < min(assembled, budget)
