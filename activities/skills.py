"""Skill files: the folders users write, read once when the worker starts.

A skill is ``<skills dir>/<name>/SKILL.md``: front matter between two ``---``
lines, then the instructions in Markdown::

    ---
    name: csv-analysis
    description: Aggregate and compare columns of CSV files in the workspace.
    tools:
      - workspace.read_csv
      - table.aggregate
    ---
    # CSV analysis
    1. List the files, then read the one the question names ...

The front matter is a small, strict subset of YAML: ``key: value`` lines and a
``tools`` list (``- name`` lines under it, or ``[a, b]`` inline); ``name`` must
be the folder's name, ``description`` is one line, ``tools`` names registered
tools. Anything else (an unknown key, a tab, a stray line, an empty body) is a
:class:`SkillFileError` naming the file and the line, and the worker refuses to
start, so a typo never silently grants or hides a tool.

Every problem is a :class:`SkillFileError` (file, line, problem); an agent naming a
skill the folder lacks is the agents file's error (:meth:`dossier.agents.AgentsFile.check_skills`).

What the model sees (the catalog) and which tools a loaded skill offers are
decided in :mod:`policy.skills`; loading one is the ``load_skill`` tool
(:mod:`activities.tools.skills`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policy.records import SkillCatalogEntry

SKILL_FILE = "SKILL.md"
"""The Markdown file inside each skill folder."""

_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
"""A skill's name: lower-case words joined by ``-`` (the convention of skill folders)."""
_KEYS = ("name", "description", "tools")
_DESCRIPTION_MAX = 300
_INSTRUCTIONS_MAX = 20_000


class SkillFileError(ValueError):
    """A skill file (or folder) that does not fit the format.

    Attributes:
        file: the file.
        line: 1-based line of the problem (``None``: the file as a whole).
        problem: what is wrong.
    """

    def __init__(self, file: Path | str, problem: str, *, line: int | None = None) -> None:
        self.file, self.line, self.problem = Path(file), line, problem
        super().__init__(f"{file}{f':{line}' if line is not None else ''}: {problem}")


@dataclass(frozen=True)
class Skill:
    """One parsed skill."""

    name: str
    description: str
    """One line: when to load it (what the catalog shows)."""
    tools: tuple[str, ...]
    """Canonical names of the tools it grants once loaded."""
    instructions: str
    """The Markdown after the front matter: what ``load_skill`` returns to the model."""
    path: Path

    def entry(self, loaded: bool = False) -> SkillCatalogEntry:
        """Its catalog entry (with its instructions once it is loaded)."""
        return SkillCatalogEntry(name=self.name, description=self.description,
                                 instructions=self.instructions if loaded else None)


def _scalar(raw: str, path: Path, line: int) -> str:
    """A front-matter value: plain, or in matching single or double quotes."""
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    if value[:1] in ("\"", "'", "[", "{", "|", ">", "&", "*", "!"):
        raise SkillFileError(path, f"unsupported value {value!r}: use a plain or quoted one-line string", line=line)
    return value


def _inline_list(raw: str, path: Path, line: int) -> list[str]:
    inner = raw.strip()[1:-1].strip()
    return [_scalar(item, path, line) for item in inner.split(",")] if inner else []


def _front_matter(lines: list[str], path: Path) -> tuple[dict[str, Any], int]:
    """The front matter's fields and the index of the first body line."""
    if not lines or lines[0].strip() != "---":
        raise SkillFileError(path, "must start with a '---' line opening the front matter", line=1)
    fields: dict[str, Any] = {}
    in_tools = False
    for index in range(1, len(lines)):
        number, text = index + 1, lines[index]
        if text.strip() == "---":
            return fields, index + 1
        if "\t" in text:
            raise SkillFileError(path, "tabs are not allowed in front matter; indent with spaces", line=number)
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if in_tools and text.startswith((" ", "-")) and text.lstrip().startswith("- "):
            fields["tools"].append(_scalar(text.lstrip()[2:], path, number))
            continue
        in_tools = False
        key, colon, value = text.partition(":")
        if not colon or key != key.strip() or not key:
            raise SkillFileError(path, f"expected 'key: value', got {text.strip()!r}", line=number)
        if key not in _KEYS:
            raise SkillFileError(path, f"unknown key {key!r}; known keys: {', '.join(_KEYS)}", line=number)
        if key in fields:
            raise SkillFileError(path, f"{key!r} is given twice", line=number)
        if key == "tools":
            stripped = value.strip()
            if stripped.startswith("[") and stripped.endswith("]"):
                fields["tools"] = _inline_list(stripped, path, number)
            elif stripped:
                raise SkillFileError(path, "tools is a list: '- name' lines below it, or [a, b]", line=number)
            else:
                fields["tools"], in_tools = [], True
            continue
        fields[key] = (_scalar(value, path, number), number)
    raise SkillFileError(path, "the front matter is never closed by a '---' line", line=len(lines))


def parse_skill(text: str, path: Path | str, *, folder: str | None = None) -> Skill:
    """Parse one ``SKILL.md``.

    Args:
        path: where it was read from (for errors).
        folder: the folder's name, which ``name`` must equal (``None``: not checked).

    Raises:
        SkillFileError: bad front matter (with its line), a missing field, a bad name or an empty body.
    """
    path = Path(path)
    lines = text.splitlines()
    fields, body_start = _front_matter(lines, path)
    for required in ("name", "description"):
        if required not in fields:
            raise SkillFileError(path, f"the front matter has no {required!r}", line=1)
    name, name_line = fields["name"]
    description, description_line = fields["description"]
    if not _NAME.fullmatch(name):
        raise SkillFileError(path, f"name {name!r}: lower-case letters and digits, words joined by '-'",
                             line=name_line)
    if folder is not None and name != folder:
        raise SkillFileError(path, f"name {name!r} must be the folder's name {folder!r}", line=name_line)
    if not description or len(description) > _DESCRIPTION_MAX:
        raise SkillFileError(path, f"description must be one line of 1 to {_DESCRIPTION_MAX} characters",
                             line=description_line)
    tools = tuple(fields.get("tools", ()))
    if any(not tool for tool in tools) or len(set(tools)) != len(tools):
        raise SkillFileError(path, f"tools must be distinct, non-empty names, got {list(tools)}", line=1)
    instructions = "\n".join(lines[body_start:]).strip()
    if not instructions:
        raise SkillFileError(path, "the instructions after the front matter are empty", line=body_start + 1)
    if len(instructions) > _INSTRUCTIONS_MAX:
        raise SkillFileError(path, f"the instructions are over {_INSTRUCTIONS_MAX} characters; keep a skill short")
    return Skill(name=name, description=description, tools=tools, instructions=instructions, path=path)


@dataclass(frozen=True)
class SkillLibrary:
    """The skills of one skills folder, by name (empty when no folder is configured)."""

    skills: Mapping[str, Skill] = field(default_factory=dict)
    folder: Path | None = None

    def __contains__(self, name: object) -> bool:
        return name in self.skills

    def get(self, name: str) -> Skill | None:
        """The skill called ``name``, if the folder has it."""
        return self.skills.get(name)

    def catalog(self, names: Iterable[str], loaded: Collection[str] = ()) -> tuple[SkillCatalogEntry, ...]:
        """Catalog entries of the named skills the library has, by name; ``loaded`` ones carry their instructions."""
        return tuple(self.skills[name].entry(name in loaded) for name in sorted(set(names)) if name in self.skills)

    def granted(self, names: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Skill name -> the tools it grants, for the named skills the library has."""
        return {name: self.skills[name].tools for name in sorted(set(names)) if name in self.skills}


def load_skills(folder: Path | str, known_tools: Collection[str] | None) -> SkillLibrary:
    """Read every ``<folder>/<name>/SKILL.md``.

    Args:
        known_tools: the registered tool names: a skill granting anything else is refused here,
            when the worker starts, not when a model loads it (``None``: not checked here; a client
            that only needs the skills' names knows no MCP tool).

    Raises:
        SkillFileError: a missing folder, a subfolder without ``SKILL.md``, an unreadable or bad
            file, or a skill granting an unknown tool (its ``tools`` line).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise SkillFileError(folder, "the skills folder does not exist or is not a folder")
    skills: dict[str, Skill] = {}
    for sub in sorted(path for path in folder.iterdir() if path.is_dir() and not path.name.startswith(".")):
        path = sub / SKILL_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise SkillFileError(path, f"cannot read: {error}") from error
        skill = parse_skill(text, path, folder=sub.name)
        unknown = [tool for tool in skill.tools if tool not in known_tools] if known_tools is not None else []
        if unknown:
            line = next((n for n, text_line in enumerate(text.splitlines(), 1) if text_line.startswith("tools")),
                        None)
            registered = ", ".join(sorted(known_tools))
            raise SkillFileError(path, f"grants unknown tool(s) {unknown}; registered: {registered}", line=line)
        skills[skill.name] = skill
    return SkillLibrary(skills=skills, folder=folder)


def participant_skills(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The skills a participant may load: its agent's ``skills`` (stored in the participant's ``config``)."""
    names = config.get("skills") or ()
    return tuple(name for name in names if isinstance(name, str))


__all__ = [
    "SKILL_FILE",
    "Skill",
    "SkillFileError",
    "SkillLibrary",
    "load_skills",
    "parse_skill",
    "participant_skills",
]
