"""Workflow code imports no I/O library: it orchestrates, activities do the I/O."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("minio", "urllib3", "sqlalchemy", "asyncpg", "tiktoken", "alembic", "store", "activities")


def test_importing_the_workflows_pulls_in_no_io_library() -> None:
    probe = (
        "import sys, workflows, contracts\n"
        f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_workflow_boundary_models_carry_no_free_text_payload_fields() -> None:
    """Inputs, results and signals are ids and small settings; a 'messages' or 'payload' field would be a leak."""
    import contracts

    suspicious = {"messages", "transcript", "payload", "content", "result_bytes", "prompt_text", "text"}
    for name in contracts.__all__:
        model = getattr(contracts, name)
        if isinstance(model, type) and issubclass(model, contracts.Contract):
            assert not suspicious & set(model.model_fields), f"{name} carries {suspicious & set(model.model_fields)}"
