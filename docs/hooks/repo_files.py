"""MkDocs hook: publish the repository folders the pages link to (benchmark outputs, examples) beside them.

The pages link to ``bench-results/traces.md`` or ``examples/agents.toml`` as the repository lays them out;
this adds those files to the build under the same paths, so `mkdocs build --strict` checks the links
against the committed files instead of copies that could drift.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

FOLDERS = ("bench-results", "examples")


def on_files(files: Files, config) -> Files:
    root = Path(config["config_file_path"]).parent
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.parts[-2] != "tmp":
                files.append(File(str(path.relative_to(root)), src_dir=str(root), dest_dir=config["site_dir"],
                                  use_directory_urls=config["use_directory_urls"]))
    return files
