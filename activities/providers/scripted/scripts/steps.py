"""The vocabulary every script is written in: a turn, a reply, and advancing one step.

A script is a function ``(Turn) -> Reply``. It walks its steps in order and
asks the context where each stands (:meth:`ContextView.progress`): a step
whose result is in view is done; the first one that is not decides the
reply: call its tool, say what it is waiting for, or report its failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from activities.providers.scripted.context import ContextView, Progress


@dataclass(frozen=True)
class Call:
    """A tool call a script wants to make."""

    tool: str
    """Canonical tool name."""
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """What a script answers: text, tool calls, or both."""

    text: str = ""
    calls: tuple[Call, ...] = ()


@dataclass(frozen=True)
class Turn:
    """What a script knows: the parsed context, who it is, which tools it is offered."""

    view: ContextView
    participant: str
    """The speaking participant's name."""
    offered: frozenset[str]
    """Canonical names of the tools in the request."""


Script = Callable[[Turn], Reply]

_RETRY = re.compile(r"\b(try again|retry|re-run|rerun)\b", re.IGNORECASE)


def call(turn: Turn, tool: str, **arguments: Any) -> Reply:
    """Call ``tool``, or say it cannot be called when the request does not offer it."""
    if tool not in turn.offered:
        return Reply(text=f"I need the {tool} tool for this, and it is not available to me in this run.")
    return Reply(calls=(Call(tool, dict(arguments)),))


def retry_requested(turn: Turn) -> bool:
    """Whether the user asked to try a failed step again."""
    return bool(_RETRY.search(turn.view.latest_user_text()))


def advance(turn: Turn, progress: Progress, tool: str, arguments: dict[str, Any], goal: str) -> Reply | None:
    """The reply that moves an unfinished step forward, or ``None`` when the step is done.

    Args:
        progress: where the step stands.
        arguments: the arguments to call it with.
        goal: what the step is for, in words ("read sales/2026-q3-orders.csv").

    Returns:
        A tool call (to do, stale, or a failure the user asked to retry), a
        waiting notice, a failure report, or ``None``.
    """
    if progress.state == "done":
        return None
    if progress.state == "todo" or (progress.state == "failed" and retry_requested(turn)):
        return call(turn, tool, **arguments)
    if progress.state == "waiting" and progress.call is not None:
        return Reply(text=f"I am still waiting for {tool} {progress.cite} to {goal} "
                          f"({progress.call.status.lower()}); I will not assume its result.")
    return Reply(text=f"I could not {goal}: {tool} failed {progress.cite}: {failure_text(progress)}")


def failure_text(progress: Progress) -> str:
    """The error a failed step shows: the open call's error excerpt, or the failure memory's."""
    if progress.call is not None:
        return progress.call.error
    if progress.failure is not None:
        return progress.failure.result
    return "no error text in view"


# --------------------------------------------------------------------------- words from text

CSV_PATH = re.compile(r"[\w][\w./-]*\.csv\b", re.IGNORECASE)
_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> set[str]:
    """Lower-case words and numbers of ``text``."""
    return set(_TOKEN.findall(text.lower()))


def best_path(paths: list[str], texts: list[str]) -> str | None:
    """The path the conversation is about: named outright, else sharing the most words.

    ``texts`` are tried in order (the newest request first): a follow-up such
    as "please try again" names no file, so the request before it decides.
    With no match anywhere the first path is taken; ties go to the earlier
    path, so the choice is deterministic.
    """
    if not paths:
        return None
    for text in texts:
        lowered = text.lower()
        for path in paths:
            if path.lower() in lowered:
                return path
        words = tokens(text)
        scores = [len(tokens(path) & words) for path in paths]
        if max(scores) > 0:
            return paths[scores.index(max(scores))]
    return paths[0]


def first_sentence(text: str, limit: int = 90) -> str:
    """The first sentence of ``text`` without its end punctuation, clipped to ``limit`` characters."""
    head = re.split(r"(?<=[.!?])\s", " ".join(text.split()), maxsplit=1)[0].rstrip(".!?")
    return head if len(head) <= limit else head[: limit - 1].rstrip() + "…"


def slug(text: str) -> str:
    """``revenue_eur`` -> ``revenue-eur``: a file-name-safe form."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "data"


__all__ = [
    "CSV_PATH",
    "Call",
    "Reply",
    "Script",
    "Turn",
    "advance",
    "best_path",
    "call",
    "failure_text",
    "first_sentence",
    "retry_requested",
    "slug",
    "tokens",
]
