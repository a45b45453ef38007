"""The trajectory file is found next to the repository, or named; a missing one is a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.bench.traces import DEFAULT_TRACES, REPO_ROOT, load_traces


def test_the_default_does_not_depend_on_the_working_directory() -> None:
    assert DEFAULT_TRACES.is_absolute()
    assert (REPO_ROOT / "pyproject.toml").is_file()


def test_a_missing_file_says_how_to_name_one(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="--traces PATH or set DOSSIER_TRACES"):
        load_traces(tmp_path / "nope.jsonl")


def test_limit_reads_only_the_first_trajectories(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "messages": []}\n\n{"id": "b", "messages": []}\n')
    assert [t["id"] for t in load_traces(path)] == ["a", "b"]
    assert [t["id"] for t in load_traces(path, limit=1)] == ["a"]
    assert load_traces(path, limit=0) == []


def test_a_trajectory_clock_needs_every_message_timed_and_in_order() -> None:
    from datetime import UTC, datetime

    from harness.bench.traces import trace_clock

    timed = {"messages": [{"role": "user", "timestamp": "2026-05-01T10:00:00"},
                          {"role": "assistant", "timestamp": 1777629660}]}
    assert trace_clock(timed) == [datetime(2026, 5, 1, 10, 0, tzinfo=UTC), datetime(2026, 5, 1, 10, 1, tzinfo=UTC)]
    assert trace_clock({"messages": [{"role": "user", "timestamp": "2026-05-01T10:00:00"}, {"role": "assistant"}]}) \
        is None
    backwards = {"id": "t", "messages": [{"timestamp": 100}, {"timestamp": 50}]}
    with pytest.raises(ValueError, match="message 1's timestamp is earlier"):
        trace_clock(backwards)
    with pytest.raises(ValueError, match="message 0's timestamp 'yesterday' is neither ISO 8601"):
        trace_clock({"messages": [{"timestamp": "yesterday"}]})
