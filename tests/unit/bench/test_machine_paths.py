"""Committed benchmark outputs name files relative to the repository, never by this machine's paths."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from harness.bench.machine import repo_relative

REPO = Path(__file__).resolve().parents[3]
ABSOLUTE = re.compile(r"(^|[^A-Za-z0-9_.])/(work|tmp|root|home)/[A-Za-z0-9_.-]+(/|\s|$)")


def test_a_path_beside_or_inside_the_repository_is_named_relative_to_it() -> None:
    assert repo_relative(REPO / "bench-results" / "traces.md") == "bench-results/traces.md"
    assert repo_relative(REPO.parent / "shared" / "data" / "traces.jsonl") == "../shared/data/traces.jsonl"


def test_no_committed_output_or_page_names_an_absolute_machine_path() -> None:
    files = subprocess.run(["git", "ls-files", "bench-results", "docs", "README.md"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    found = [f"{name}:{n}" for name in files if not name.endswith(".png")
             for n, line in enumerate((REPO / name).read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if ABSOLUTE.search(line)]
    assert not found, found


def test_no_committed_file_names_a_checkout_or_home_folder_of_this_machine() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    pattern = re.compile(r"(^|[^A-Za-z0-9_.])/(work|root|home)/[A-Za-z0-9_.-]+/")
    found = [name for name in files if not name.endswith((".png", ".gguf"))
             and (REPO / name).is_file() and pattern.search((REPO / name).read_text(encoding="utf-8", errors="replace"))]
    assert not found, found
