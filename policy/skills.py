"""Skills, the pure part: the compact catalog a participant reads, and which tools its loaded skills offer.

A skill is a folder a user writes (``<dir>/<name>/SKILL.md``: front matter with
a name, a one-line description and the tools it grants, then instructions).
The I/O layer reads the files (:mod:`activities.skills`); this module only
decides, from data:

* the catalog: one line per skill the participant may load, rendered as its own
  system message right after the participant's prompt, then the instructions of
  each loaded skill (from its file, so they stay in view however the ``load_skill``
  result is compacted later). It changes only when a skill is loaded or the skill
  files or the agent's ``skills`` change, so its cache entry lasts;
* which skills are loaded: the latest :class:`~policy.records.SkillStateRecord`
  per skill of the participant, when it is active (the graph is the only source:
  a workflow carries ids, so a resumed parent, a continued-as-new turn or a new
  worker read the same answer);
* which tools are offered: the participant's base tools, minus every tool one of
  its skills grants, plus ``load_skill`` and the tools its loaded skills grant.

Nothing here reads a tool result: only a ``load_skill`` call the runtime executed
writes skill state, so text inside a tool result cannot load a skill or widen the
tool set.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from policy.enums import MessageRole
from policy.lines import fenced_data, inert
from policy.records import ChatMessage, SkillCatalogEntry, SkillStateRecord

LOAD_SKILL = "load_skill"
"""The built-in tool that loads a skill (its canonical and wire name)."""

CATALOG_HEADER = (
    "Skills you can load with the load_skill tool (name: when to use it). Loading one gives you its "
    "instructions and the tools it grants for the rest of this run; load a skill only when the task needs it."
)
"""First line of the catalog message."""


LOADED_MARK = " (loaded)"
"""After a loaded skill's name in the list."""
LOADED_TITLE = "Instructions of loaded skill {name}:"
"""Opens a loaded skill's instructions, after the list."""


def catalog_text(entries: Iterable[SkillCatalogEntry]) -> str:
    """The catalog's text: the header, ``- name: description`` per skill by name, then loaded skills' instructions.

    ``""`` when there are no skills.

    Args:
        entries: the skills the participant may load (duplicates by name are shown once).

    Returns:
        The message text, byte-identical for the same set of entries in any order.
    """
    unique = {entry.name: entry for entry in sorted(entries, key=lambda e: (e.name, e.description))}
    if not unique:
        return ""
    lines = [f"- {inert(entry.name)}{LOADED_MARK if entry.instructions is not None else ''}: "
             f"{inert(entry.description)}" for entry in unique.values()]
    blocks = ["\n".join([CATALOG_HEADER, *lines])]
    # The instructions are the skill author's text, not Dossier's: a fenced block that cites nothing.
    blocks += [f"{LOADED_TITLE.format(name=inert(entry.name))}\n{fenced_data(entry.instructions.strip())}"
               for entry in unique.values() if entry.instructions is not None]
    return "\n\n".join(blocks)


def catalog_message(entries: Iterable[SkillCatalogEntry]) -> ChatMessage | None:
    """The catalog as a system message (``None`` when the participant has no skills)."""
    text = catalog_text(entries)
    return ChatMessage(role=MessageRole.SYSTEM, content=text) if text else None


def loaded_skills(states: Iterable[SkillStateRecord], participant_id: str) -> tuple[str, ...]:
    """The skills ``participant_id`` has loaded: each skill's latest state (by ``seq``, then id), if active.

    Args:
        states: skill states on the participant's lineage (others' states are ignored).
    """
    latest: dict[str, SkillStateRecord] = {}
    for state in sorted(states, key=lambda s: (s.seq, s.id)):
        if state.participant_id == participant_id:
            latest[state.skill] = state
    return tuple(sorted(name for name, state in latest.items() if state.active))


def offered_with_skills(
    base: Sequence[str],
    granted: Mapping[str, Sequence[str]],
    loaded: Collection[str],
    known: Collection[str],
) -> list[str]:
    """The tools a participant is offered once its skills are taken into account.

    Args:
        base: what it is offered without skills (its allow-list, or its provider's default).
        granted: skill name -> tools it grants, for the skills the participant may load
            (empty: the participant has no skills, and ``load_skill`` is never offered).
        loaded: the skills it has loaded (:func:`loaded_skills`); a name not in ``granted``
            (a skill its agent no longer lists) grants nothing.
        known: the registered tool names; nothing else is ever offered.

    Returns:
        Canonical names, sorted: ``base`` without the tools any of its skills grants, plus
        ``load_skill`` and the tools of the loaded skills.
    """
    if not granted:
        return sorted(name for name in base if name != LOAD_SKILL and name in known)
    gated = {tool for tools in granted.values() for tool in tools}
    offered = {name for name in base if name not in gated and name != LOAD_SKILL}
    offered |= {tool for skill in loaded if skill in granted for tool in granted[skill]}
    offered.add(LOAD_SKILL)
    return sorted(name for name in offered if name in known)


__all__ = [
    "CATALOG_HEADER",
    "LOADED_MARK",
    "LOADED_TITLE",
    "LOAD_SKILL",
    "catalog_message",
    "catalog_text",
    "loaded_skills",
    "offered_with_skills",
]
