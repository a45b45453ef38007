"""Read the seed scenarios from their folders.

Each seed is a folder under ``seeds/`` named ``<position>_<scenario name>``
(``03_stale_connected_app_memory``): the position orders the scenarios, the
rest is the scenario's name. The folder holds ``scenario.toml``, the
:class:`~harness.scenarios.model.Scenario` without its name, and the files it
names beside it:

- ``result_file = "events.json"`` on a tool step: the tool's raw result, byte
  for byte (payloads are hashed and tokenised, so the file is read as bytes).
- ``argument_files = { sql = "query.sql.sql" }`` on a tool step: arguments
  whose values are documents (SQL, Markdown, CSV). They follow the inline
  ``arguments``, in the order listed.
- ``state_file = "sql-analyst.state.json"`` on a skill or checkpoint step: the
  state as JSON, for a state TOML cannot write (TOML has no null).

Every file in a seed folder is named by its ``scenario.toml``, and every name
resolves to a file there, so a fixture cannot go stale unnoticed.

Errors::

    SeedError   a seed folder cannot be read, or its scenario does not validate
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.scenarios.model import Scenario

SEEDS = Path(__file__).parent / "seeds"
"""The folder of the seed scenarios shipped with the harness."""

SCENARIO_FILE = "scenario.toml"

_FOLDER = re.compile(r"(?P<position>[0-9]+)_(?P<name>[a-z0-9_]+)")


class SeedError(ValueError):
    """A seed folder cannot be read, or the scenario it holds does not validate.

    Args:
        path: the folder or file at fault.
        problem: what is wrong with it.
    """

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        """The folder or file at fault."""


def load_seeds(root: Path = SEEDS) -> tuple[Scenario, ...]:
    """Every seed scenario under ``root``, ordered by folder position.

    Args:
        root: the folder holding one folder per seed.

    Returns:
        The scenarios, lowest position first.

    Raises:
        SeedError: a folder is misnamed, two folders share a position or a
            name, or a seed does not load; the message names the file and, for
            a validation error, each field.
    """
    folders: list[tuple[int, str, Path]] = []
    for path in root.iterdir():
        if not path.is_dir():
            continue
        match = _FOLDER.fullmatch(path.name)
        if match is None:
            raise SeedError(path, "a seed folder is named <position>_<scenario name>, e.g. 07_branch_isolation")
        folders.append((int(match["position"]), match["name"], path))
    folders.sort()
    positions: dict[int, Path] = {}
    names: dict[str, Path] = {}
    for position, name, path in folders:
        if position in positions:
            raise SeedError(path, f"same position as {positions[position].name}")
        if name in names:
            raise SeedError(path, f"same name as {names[name].name}")
        positions[position] = names[name] = path
    return tuple(_load_seed(path, name) for _, name, path in folders)


def _load_seed(folder: Path, name: str) -> Scenario:
    """The scenario ``name`` in ``folder``, with its payload files read in."""
    path = folder / SCENARIO_FILE
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError as error:
        raise SeedError(path, "missing") from error
    except tomllib.TOMLDecodeError as error:
        raise SeedError(path, f"not valid TOML: {error}") from error
    if "name" in data:
        raise SeedError(path, f"name: the name comes from the folder ({name!r}); remove it here")
    used = _read_files(folder, path, data.get("steps"))
    try:
        scenario = Scenario.model_validate({"name": name, **data})
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}" for item in error.errors()
        )
        raise SeedError(path, problems) from error
    # After validation, so that a misspelt ``result_file`` is reported as such.
    unused = sorted(
        entry.name for entry in folder.iterdir()
        if entry.name not in used and entry.name != SCENARIO_FILE and not entry.name.startswith(".")
    )
    if unused:
        raise SeedError(folder, f"files not named by {SCENARIO_FILE}: {', '.join(unused)}")
    return scenario


def _read_files(folder: Path, path: Path, steps: Any) -> set[str]:
    """Replace each step's file references with the files' contents, in place.

    Returns:
        The names of the files read.
    """
    used: set[str] = set()
    if not isinstance(steps, list):
        return used  # validation reports the missing or malformed steps

    def read(index: int, field: str, name: Any) -> str:
        where = f"steps.{index}.{field}"
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise SeedError(path, f"{where}: expected the name of a file in {folder.name}, got {name!r}")
        try:
            # Bytes, then UTF-8: text mode would translate line endings.
            content = (folder / name).read_bytes().decode("utf-8")
        except FileNotFoundError as error:
            raise SeedError(path, f"{where}: no file {name!r} in {folder}") from error
        except UnicodeDecodeError as error:
            raise SeedError(folder / name, f"not UTF-8: {error}") from error
        used.add(name)
        return content

    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        kind = step.get("kind")
        if kind == "tool" and "result_file" in step:
            if "result" in step:
                raise SeedError(path, f"steps.{index}: give result or result_file, not both")
            step["result"] = read(index, "result_file", step.pop("result_file"))
        if kind == "tool" and "argument_files" in step:
            files = step.pop("argument_files")
            arguments = step.get("arguments", {})
            if not isinstance(files, dict) or not isinstance(arguments, dict):
                raise SeedError(path, f"steps.{index}: arguments and argument_files are tables")
            for argument, name in files.items():
                if argument in arguments:
                    raise SeedError(path, f"steps.{index}.argument_files.{argument}: also an inline argument")
                arguments[argument] = read(index, f"argument_files.{argument}", name)
            step["arguments"] = arguments
        if kind in ("skill", "checkpoint") and "state_file" in step:
            if "state" in step:
                raise SeedError(path, f"steps.{index}: give state or state_file, not both")
            name = step.pop("state_file")
            try:
                step["state"] = json.loads(read(index, "state_file", name))
            except json.JSONDecodeError as error:
                raise SeedError(folder / name, f"not valid JSON: {error}") from error
    return used
