"""Text Dossier did not write, in the three places it reaches the model besides tool results.

Every payload of the injection corpus (:mod:`harness.harden.corpus`) goes, through the
renderers the runtime uses, into:

* an **MCP server's tool**: its description, and its argument schema's description, title and enum
  (:func:`activities.tools.mcp.server_description`, :func:`activities.tools.mcp.neutral_schema`);
  a schema too large for every model call must be refused with an error naming the server and
  the tool, never offered;
* a **loaded skill's instructions** and its catalog line (:func:`policy.skills.catalog_message`);
* the **first line of a text result**, the start of its memory's one-line summary
  (:func:`policy.derive.derive_memory`, then :func:`policy.lines.memory_line`).

An **escape** is: a schema or description string with a line break, an unescaped citation
look-alike or over its bound; a refusal that does not name the server and the tool; a skill
catalog whose unfenced lines hold more structure (titles, items, citations, bullets, roles)
than the same catalog with harmless text, or any forged citation; a summary whose tool-written
part is not a quoted string that reads back as the text. Pure: no services.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from activities.tools.mcp import DESCRIPTION_MAX, SCHEMA_TEXT_MAX, neutral_schema, server_description
from activities.tools.mcp_config import McpServerError
from harness.harden.corpus import BENIGN, Payload, payloads
from harness.harden.report import Figures
from harness.harden.structure import extra_lines, forged_ids
from policy.derive import derive_memory, memory_record
from policy.enums import MessageRole, ToolCallStatus
from policy.lines import RESULT_SEPARATOR, ShortIds, inert, memory_line
from policy.records import ArtifactRecord, ChatMessage, SkillCatalogEntry
from policy.skills import catalog_message
from policy.tools import ToolSpec

PART = "untrusted"
_LOOKALIKE = re.compile(r"(?<!\\)\[\s*(?:m|t|a|c|s|u)\s*:", re.IGNORECASE)
PROMPT = ChatMessage(role=MessageRole.SYSTEM, content="You are Analyst. Use your tools; cite result ids.")
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (key, *_strings(item))]
    return []


def mcp_escapes(payload: Payload) -> list[str]:
    """What of the payload, as an MCP tool's description and schema, would reach the model as structure."""
    from mcp_types import Tool

    text = payload.text
    tool = Tool(name="lookup", description=text, inputSchema={
        "type": "object", "title": text[:2000], "properties": {
            "q": {"type": "string", "description": text, "enum": [text[:500], "plain"]}}})
    found: list[str] = []
    description = server_description("hostile", tool)
    if "\n" in description or _LOOKALIKE.search(description) or len(description) > DESCRIPTION_MAX + 40:
        found.append("mcp description")
    try:
        schema = neutral_schema("hostile", "lookup", tool.input_schema)
    except McpServerError as refused:
        if "'hostile'" not in str(refused) or "'lookup'" not in str(refused):
            found.append("mcp refusal does not name the server and the tool")
        return found
    for value in _strings(schema):
        if "\n" in value or "\r" in value or _LOOKALIKE.search(value) or len(value) > SCHEMA_TEXT_MAX:
            found.append("mcp schema string")
            break
    return found


def _catalog(text: str) -> list[ChatMessage]:
    first = text.splitlines()[0] if text.strip() else "x"
    message = catalog_message([SkillCatalogEntry(name="csv-analysis", description=first[:200], instructions=text
                                                 if text.strip() else "x")])
    return [PROMPT, *([message] if message else [])]


def skill_escapes(payload: Payload, control: list[ChatMessage]) -> list[str]:
    """What of the payload, as a loaded skill's instructions, reads as context structure."""
    chat = _catalog(payload.text)
    found = [f"skill {line}" for line in extra_lines(chat, set(), control, set())]
    if forged_ids(chat, set()):
        found.append("skill forged citation")
    return found


def summary_escapes(payload: Payload) -> list[str]:
    """Whether a text result starting with the payload is summarised with the payload quoted as data."""
    spec = ToolSpec(name="web.fetch", result_kind="text")
    raw = payload.data + b"\nsecond line of the page\n"
    draft = derive_memory(spec, "a" * 36, {"url": "https://example.test/"}, ToolCallStatus.SUCCEEDED, raw,
                          content_type="text/plain", observed_at=T0)
    artifact = ArtifactRecord(
        id="a" * 36, tool_call_id="c" * 36, call_id="call_1", tool_name=spec.name, status=ToolCallStatus.SUCCEEDED,
        branch_id="b" * 36, seq=1, owner_participant_id="p" * 36, visibility="branch", privacy="user",
        content_type="text/plain", sha256="0" * 64, result_bytes=len(raw), arguments_bytes=2, storage="inline",
        captured_at=T0)
    memory = memory_record(draft, artifact, memory_id="0123abcd" + "0" * 28)
    line = memory_line(memory, ShortIds([memory.id]))
    head = f"web.fetch(url=https://example.test/){RESULT_SEPARATOR}"
    if head not in line:
        return ["summary shape"]
    body = line.split(head, 1)[1]
    try:
        text, end = json.JSONDecoder().raw_decode(body)
    except ValueError:
        return ["summary not quoted"]
    if not isinstance(text, str) or "\n" in text or text != inert(text):
        return ["summary quoted text is not one inert line"]
    return []


def run_untrusted(figures: Figures, *, quick: bool = False, progress: Callable[[str], None] = lambda line: None) -> None:
    """Every corpus payload in every place; fills ``untrusted_texts`` and ``untrusted_escapes``."""
    corpus = payloads(limit=60 if quick else None)
    control = _catalog(BENIGN.text)
    checked, escapes = 0, 0
    counts = {"mcp": 0, "skill": 0, "summary": 0}
    for payload in corpus:
        for place, check in (("mcp", lambda p: mcp_escapes(p)), ("skill", lambda p: skill_escapes(p, control)),
                             ("summary", summary_escapes)):
            checked += 1
            counts[place] += 1
            found = check(payload)
            if found:
                escapes += 1
                figures.finding(PART, f"untrusted text became structure ({place})", payload=payload.name,
                                found=found[:3])
    figures.details["untrusted_places"] = counts
    progress(f"harden: untrusted: {checked} placements, {escapes} escapes")
    figures.set(untrusted_texts=checked, untrusted_escapes=escapes)


__all__ = ["mcp_escapes", "run_untrusted", "skill_escapes", "summary_escapes"]
