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
