"""Reading what a hostile payload could have changed: a context's line structure and an account's state.

The injection, MCP and provider-response parts judge a case by comparing
these readings with the same graph holding harmless text.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from sqlalchemy import text

from harness.harden.stack import Stack
from policy.enums import MessageRole
from policy.lines import SECTION_TITLES, RefKind

KINDS = "|".join(kind.value for kind in RefKind)
_CITATION = re.compile(r"(?<!\\)\[\s*(" + KINDS + r")\s*:\s*([^\]\s]*)\]", re.IGNORECASE)
_BARE = re.compile(r"(?<![\w\\\[])(" + KINDS + r"):([0-9a-fA-F]{6,})")
_TITLES = set(SECTION_TITLES.values())


def line_class(line: str) -> str:
    """What a context line claims to be, by its start."""
    stripped = line.strip()
    if stripped in _TITLES:
        return "title"
    if re.match(r"-\s*\[\s*(?:" + KINDS + r")\s*:", stripped, re.IGNORECASE):
        return "item"
    if re.match(r"\[\s*(?:" + KINDS + r")\s*:", stripped, re.IGNORECASE):
        return "citation"
    if stripped.startswith(("- ", "* ", "• ")):
        return "bullet"
    if stripped.startswith("#"):
        return "heading"
    if stripped.startswith(("```", "~~~")):
        return "fence"
    if re.match(r"(system|user|assistant|human|tool|moderator)\s*[:»]", stripped, re.IGNORECASE) \
            or stripped.startswith(("<|", "</", "<system")):
        return "role"
    return "other" if stripped else "blank"


def unfenced_lines(content: str) -> list[str]:
    """The lines of ``content`` outside the renderer's fenced blocks (the fence closes on the same run)."""
    out: list[str] = []
    fence: str | None = None
    for line in content.split("\n"):
        if fence is None:
            found = re.match(r"(`{3,})\s*$", line)
            if found:
                fence = found.group(1)
                continue
            out.append(line)
        elif line.strip() == fence:
            fence = None
    return out


def structure(chat: Any, real_ids: set[str] | None = None, control_titles: set[str] | None = None) -> Counter:
    """Counts of (role, line class) over every non-tool message: what the control must match.

    With ``real_ids``, lines a real record produced are told apart (classes ending ``-real``, left
    out of the comparison): an item whose citation resolves to a record of the assembly, and a
    section title met once in its message whose first item is such a record (or that the control's
    context has too). A context that shows more records than the control (a payload's size can
    start a new epoch) then differs only in ``-real`` lines; a forged title or item never does.
    """
    counts: Counter = Counter()
    for message in chat:
        if message.role is MessageRole.TOOL:
            continue
        lines = unfenced_lines(message.content or "")
        seen_titles: set[str] = set()
        for index, line in enumerate(lines):
            cls = line_class(line)
            if real_ids is not None and cls == "item" and _item_is_real(line, real_ids):
                cls = "item-real"
            elif real_ids is not None and cls == "title":
                title = line.strip()
                following = next((n for n in lines[index + 1:] if n.strip()), "")
                if title not in seen_titles and (
                        (line_class(following) == "item" and _item_is_real(following, real_ids))
                        or title in (control_titles or set())):
                    cls = "title-real"
                seen_titles.add(title)
            counts[(message.role.value, cls)] += 1
    return counts


def extra_lines(chat: Any, real_ids: set[str], control: Any, control_real_ids: set[str]) -> dict[str, int]:
    """The (role/class) lines ``chat`` has more of than the control's context: forged structure, if any.

    Blank lines and lines a real record produced (classes ending ``-real``) are not counted.
    """
    got = structure(chat, real_ids, titles_of(control))
    base = structure(control, control_real_ids)
    return {f"{role}/{cls}": got[(role, cls)] - base[(role, cls)] for role, cls in got
            if cls != "blank" and not cls.endswith("-real") and got[(role, cls)] > base[(role, cls)]}


def titles_of(chat: Any) -> set[str]:
    """The section titles a context shows."""
    return {line.strip() for message in chat if message.role is not MessageRole.TOOL
            for line in unfenced_lines(message.content or "") if line.strip() in _TITLES}


def _item_is_real(line: str, real_ids: set[str]) -> bool:
    found = _CITATION.search(line)
    return bool(found) and _resolves(found.group(2), real_ids)


def forged_ids(chat: Any, real_ids: set[str]) -> list[str]:
    """Citations and bare references outside tool messages and fences that name no real record."""
    forged = []
    for message in chat:
        if message.role is MessageRole.TOOL:
            continue
        for line in unfenced_lines(message.content or ""):
            for kind, short in [*_CITATION.findall(line), *_BARE.findall(line)]:
                if not _resolves(short, real_ids):
                    forged.append(f"{kind}:{short}")
    return forged


def _resolves(short: str, real_ids: set[str]) -> bool:
    short = short.lower().replace("-", "")
    return bool(short) and any(real.startswith(short) for real in real_ids)


def real_ids_of(candidates: Any) -> set[str]:
    ids = set()
    for group in ("tool_calls", "artifacts", "tool_memories", "checkpoints", "skill_states", "user_memories",
                  "messages", "participants"):
        for record in getattr(candidates, group, ()) or ():
            ids.add(record.id.lower().replace("-", ""))
    return ids


async def _state(stack: Stack, account: str, other: str) -> dict[str, str]:
    """Digests of what a payload must not change: memories, skills, participants, the other participant."""
    queries = {
        "user_memories": "SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM user_memories t "
                         "WHERE account_id=:a",
        "skill_states": "SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM skill_states t "
                        "WHERE account_id=:a",
        "participants": "SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM participants t "
                        "WHERE account_id=:a",
        "other_calls": "SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM tool_calls t "
                       "WHERE account_id=:a AND participant_id=:o",
        "other_artifacts": "SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM tool_artifacts t "
                           "WHERE account_id=:a AND owner_participant_id=:o",
        "other_memories": "SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM tool_memories t "
                          "WHERE account_id=:a AND owner_participant_id=:o",
    }
    async with stack.deps.sessions() as session:
        return {name: str(await session.scalar(text(sql), {"a": account, "o": other}))
                for name, sql in queries.items()}


async def account_state(stack: Stack, account: str) -> dict[str, str]:
    state = await _state(stack, account, "")
    return {k: v for k, v in state.items() if not k.startswith("other_")}
