"""A bounded view of a large text result: what its first read shows when the whole is over the cap.

A coding agent's results are file dumps, test logs and search listings of 5-15k tokens. Sent whole they
fill the budget in a few calls; summarised to a line they lose the lines the next call needs. A view keeps
the head and the tail, the lines that matter (errors, failures, tracebacks, warnings, with a line of context
each side) and, for every gap, its exact line range, so the model can ``recall`` any part of the full bytes,
which stay in the artifact. Lines are shown exactly as the tool wrote them; a line longer than
:data:`LINE_MAX_CHARS` is cut with a marker. Pure and deterministic, like the rest of the policy.
"""

from __future__ import annotations

import re

LINE_MAX_CHARS = 400
"""A single shown line is cut past this (a minified file is one line)."""
HEAD_SHARE, TAIL_SHARE = 0.4, 0.2
"""Of the view's bytes: what the head may take first, then the tail; the lines that matter get the rest."""
CONTEXT_LINES = 1
"""Lines shown on each side of a line that matters."""
MATTERS = re.compile(
    r"error|exception|traceback|fail|assert|warning|fatal|panic|denied|not found|no such|undefined|"
    r"^E\s|^FAILED|^ERROR|Killed|timed? ?out", re.IGNORECASE)
"""A line that matters: how a log says something went wrong (pytest's ``E`` lines, tracebacks, errors)."""
VIEW_HEADER = ("[view of a {size:,}-byte result, {lines:,} lines: {shown}; the full result is {ref}, "
               'recall it with a locator {{"kind": "lines", "start": N, "end": M}} for any other lines]')
GAP_LINE = "[lines {start:,}-{end:,} not shown]"
_TEXT_TYPES = ("json", "xml", "yaml", "csv", "javascript", "x-sh", "x-python")


def viewable(content_type: str) -> bool:
    """Whether a result of this content type reads as lines (a view of an image or an archive is noise)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return not kind or kind.startswith("text/") or any(name in kind for name in _TEXT_TYPES)


def text_view(text: str, max_bytes: int, ref: str) -> str:
    """``text`` whole when it fits ``max_bytes`` UTF-8 bytes, else its view within about that size."""
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    lines = text.split("\n")
    shown = [_cut(line) for line in lines]
    cost = [len(line.encode("utf-8")) + 1 for line in shown]
    room = max(0, max_bytes - len(VIEW_HEADER) - 80)
    picked: set[int] = set()
    spent = 0

    def take(indexes: list[int], limit: float) -> None:
        nonlocal spent
        for i in indexes:
            if i in picked:
                continue
            if spent + cost[i] > limit:
                return
            picked.add(i)
            spent += cost[i]

    take(list(range(len(lines))), room * HEAD_SHARE)
    take(list(range(len(lines) - 1, -1, -1)), room * (HEAD_SHARE + TAIL_SHARE))
    matters = [i for i, line in enumerate(lines) if MATTERS.search(line)]
    around = [j for i in matters for j in range(max(0, i - CONTEXT_LINES), min(len(lines), i + CONTEXT_LINES + 1))]
    take(list(dict.fromkeys(around)), room)
    ranges = _ranges(sorted(picked))
    out = [VIEW_HEADER.format(size=len(text.encode("utf-8")), lines=len(lines), ref=ref,
                              shown="lines " + ", ".join(_span(a, b) for a, b in ranges) if ranges else "no lines")]
    previous_end = 0
    for start, end in ranges:
        if start > previous_end + 1:
            out.append(GAP_LINE.format(start=previous_end + 1, end=start - 1))
        out += shown[start - 1:end]
        previous_end = end
    if previous_end < len(lines):
        out.append(GAP_LINE.format(start=previous_end + 1, end=len(lines)))
    return "\n".join(out)


def _cut(line: str) -> str:
    return line if len(line) <= LINE_MAX_CHARS else f"{line[:LINE_MAX_CHARS]}[line cut at {LINE_MAX_CHARS} of {len(line):,} chars]"


def _ranges(indexes: list[int]) -> list[tuple[int, int]]:
    """0-based sorted indexes as 1-based inclusive ``(start, end)`` line ranges."""
    out: list[tuple[int, int]] = []
    for i in indexes:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i + 1, i + 1))
    return out


def _span(start: int, end: int) -> str:
    return f"{start:,}" if start == end else f"{start:,}-{end:,}"


__all__ = ["GAP_LINE", "MATTERS", "VIEW_HEADER", "text_view", "viewable"]
