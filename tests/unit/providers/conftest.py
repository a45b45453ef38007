"""Fixtures for the provider tests: in-memory worlds that assemble real contexts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scripted_world import World

WorldFactory = Callable[..., World]


@pytest.fixture
def make_world() -> WorldFactory:
    """``make_world("analyst", name=..., runtime_kind=..., stand_ins=...)``: a fresh conversation."""

    def make(model: str, **options) -> World:
        return World(model, **options)

    return make
