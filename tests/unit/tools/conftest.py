"""Fixtures for the tool tests: the default registry, attempt contexts, a scratch workspace."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from activities.tools.base import ToolContext
from activities.tools.registry import ToolRegistry, default_registry
from dossier.runtime import SAMPLE_WORKSPACE

ContextFactory = Callable[..., ToolContext]


@pytest.fixture(scope="session")
def registry() -> ToolRegistry:
    """The registry the worker builds."""
    return default_registry()


@pytest.fixture
def make_context() -> ContextFactory:
    """``make_context(attempt=1, workspace=SAMPLE_WORKSPACE, heartbeat=None)``: one attempt's context."""

    def make(attempt: int = 1, workspace: Path = SAMPLE_WORKSPACE, heartbeat=None) -> ToolContext:
        extra = {"heartbeat": heartbeat} if heartbeat is not None else {}
        return ToolContext(account_id="acct-tools", tool_call_id="tc-1", attempt=attempt, workspace=workspace,
                           artifacts=None, **extra)

    return make


@pytest.fixture
def scratch_workspace(tmp_path: Path) -> Path:
    """A copy of the sample workspace next to a secret file that must stay out of reach."""
    root = tmp_path / "workspace"
    shutil.copytree(SAMPLE_WORKSPACE, root)
    (tmp_path / "secret.csv").write_text("token\nhunter2\n")
    return root
