"""Conversation scripts: ``picker`` (deferred tool), ``coordinator`` (subagent parent),
``panelist`` (discussion participant) and ``echo``.

Each reads a different part of the context: the picker an open ``DEFERRED``
call and then the human's answer; the coordinator promoted reports and the
subagent-batch checkpoint; the panelist the latest speaker's line, its own
private evidence and the moderator's directives.
"""

from __future__ import annotations

import re
from collections import Counter

from activities.providers.scripted.context import ContextView, MemoryLine
from activities.providers.scripted.scripts.analysis import DEFAULT_TASK_FILE
from activities.providers.scripted.scripts.readings import csv_shape, field
from activities.providers.scripted.scripts.steps import CSV_PATH, Reply, Turn, advance, call, first_sentence

PICK_PROMPT = "Which CSV file should I analyse?"


# --------------------------------------------------------------------------- picker


def picker(turn: Turn) -> Reply:
    """Ask the user for a file, wait while the call is deferred, then read the pick and give its size."""
    view = turn.view
    picked = view.progress("user.pick_file")
    if picked.state == "waiting":
        # The call is open: asking again or guessing the answer would both be wrong.
        return Reply(text=f"Waiting for you to pick a file {picked.cite}.")
    arguments = {"prompt": PICK_PROMPT, "file_types": ["csv"]}
    if (reply := advance(turn, picked, "user.pick_file", arguments, "ask you for a file")) is not None:
        return reply
    if picked.memory is None:
        return Reply(text=f"You answered {picked.cite}, but your answer is not in my context.")
    path = field(picked.memory.result, "path")
    if not path:
        return Reply(text=f"Your answer {picked.cite} names no file path, so I cannot read a file yet.")
    read = view.progress("workspace.read_csv", path=path)
    if (reply := advance(turn, read, "workspace.read_csv", {"path": path}, f"read {path}")) is not None:
        return reply
    shape = csv_shape(read.memory.result) if read.memory else None
    if shape is None:
        return Reply(text=f"You picked {path} {picked.cite}; I read it {read.cite}, but its size is not in my context.")
    return Reply(text=(
        f"You picked {path} {picked.cite}. It has {shape.rows} rows and {len(shape.columns)} columns "
        f"({', '.join(shape.columns)}) {read.cite}."
    ))


# --------------------------------------------------------------------------- coordinator


def _promoted_line(memory: MemoryLine) -> str:
    if memory.file_name is not None:
        size = f", {memory.file_bytes} bytes" if memory.file_bytes is not None else ""
        place = f" at {memory.file_uri}" if memory.file_uri else ""
        return f"- file from {memory.subagent}: {memory.file_name}{size}{place} {memory.cite}"
    if memory.failed:
        return f"- failure from {memory.subagent}: {memory.tool} {memory.cite}: {memory.result}"
    return f"- from {memory.subagent} {memory.cite}: {memory.text}"


def coordinator(turn: Turn) -> Reply:
    """Summarise promoted subagent reports when they are in view; otherwise say it will delegate."""
    view = turn.view
    reports = sorted(view.reports(), key=lambda m: (m.subagent or "", m.ref))
    batches = [c for c in view.checkpoints if c.kind == "subagent_batch"]
    if not reports and not batches:
        task = first_sentence(view.latest_user_text(), 200) or "the task"
        return Reply(text=f"I will delegate this to subagents: {task}. "
                          "I will summarise their reports when they finish.")
    lines: list[str] = []
    if batches:
        batch = batches[0]
        children = [c for c in batch.state.get("children", []) if isinstance(c, dict)]
        counts = Counter(str(child.get("status", "unknown")) for child in children)
        statuses = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no children recorded"
        lines.append(f"Subagent batch {batch.cite}: {len(children)} child run(s), {statuses}.")
    if reports:
        lines.append(f"{len(reports)} subagent report(s):")
        lines += [f"- {r.subagent} ({r.outcome}) {r.cite}: {r.report}" for r in reports]
    else:
        lines.append("No subagent report has reached me yet.")
    lines += [_promoted_line(memory) for memory in view.promoted()]
    return Reply(text="\n".join(lines))


# --------------------------------------------------------------------------- panelist

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_LIMIT = re.compile(r"\b(?P<n>\d+|one|two|three|four|five) sentences?\b", re.IGNORECASE)
_NO_TOOLS = re.compile(r"\b(no (more )?tools?|without (calling |using )?tools?|(do not|don't) (call|use) tools?)\b",
                       re.IGNORECASE)
_FIGURE = re.compile(r"(?<![\w.])\d[\d.]{2,}(?![\w])")
MAX_SENTENCES = 3


def sentence_limit(directives: tuple[str, ...]) -> int:
    """The tightest sentence limit any directive sets, within the panelist's own limit of three."""
    limits = [MAX_SENTENCES]
    for directive in directives:
        for found in _LIMIT.finditer(directive):
            word = found.group("n").lower()
            limits.append(max(1, _NUMBER_WORDS.get(word) or int(word)))
    return min(limits)


def _discussed_file(view: ContextView) -> str:
    """The CSV the discussion is about: named by the latest speaker, else anywhere in the window."""
    texts = [view.latest_user_text(), *(m.content or "" for m in reversed(view.transcript))]
    for text in texts:
        named = CSV_PATH.findall(text)
        if named:
            return named[0]
    return DEFAULT_TASK_FILE


def _evidence_sentence(memory: MemoryLine | None, failed_cite: str, lead: str) -> str:
    if memory is None:
        if failed_cite:
            return f"{lead}I could not check the data: my read failed {failed_cite}."
        return f"{lead}I have no data in view to check this against."
    shape = csv_shape(memory.result)
    path = memory.args.get("path", "the file")
    if shape is None:
        return f"{lead}my evidence {memory.cite} is {path}: {memory.result}."
    sums = "; ".join(f"{column} sum {value}" for column, value in shape.sums.items())
    facts = f"{shape.rows} rows" + (f" with {sums}" if sums else "")
    return f"{lead}the data {memory.cite} shows {path} has {facts}."


def _capitalised(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def panelist(turn: Turn) -> Reply:
    """Answer the latest speaker in at most three sentences (fewer if a directive says so), citing evidence."""
    view = turn.view
    evidence = view.results("workspace.read_csv")
    tried = view.progress("workspace.read_csv")
    first_turn = not evidence and tried.state == "todo" and tried.stale is None and view.own_turns() == 0
    no_tools = any(_NO_TOOLS.search(d) for d in view.directives)
    if first_turn and not no_tools and "workspace.read_csv" in turn.offered:
        return call(turn, "workspace.read_csv", path=_discussed_file(view))

    label, text = view.latest_speaker()
    who = label or "The user"
    memory = evidence[0] if evidence else None
    failed = tried.cite if tried.state == "failed" else ""
    limit = sentence_limit(view.directives)
    figures = [figure.rstrip(".") for figure in _FIGURE.findall(text)]
    if memory is not None and any(figure in memory.result for figure in figures):
        stance = "That matches those figures, so I agree."
    else:
        stance = "I would test that claim against these figures before we rely on it."
    if limit == 1:
        sentences = [_evidence_sentence(memory, failed, f"On {who}'s point, ")]
    elif limit == 2:
        sentences = [_evidence_sentence(memory, failed, f"On {who}'s point, "), stance]
    else:
        point = first_sentence(text, 80)
        opening = f"{who} argues “{point}”." if point else f"{who} has not made a point yet."
        sentences = [opening, _capitalised(_evidence_sentence(memory, failed, "")), stance]
    return Reply(text=" ".join(sentences))


# --------------------------------------------------------------------------- echo


def echo(turn: Turn) -> Reply:
    """Repeat the latest user message; no tools."""
    return Reply(text=f"You said: {turn.view.latest_user_text()}")


__all__ = ["PICK_PROMPT", "coordinator", "echo", "panelist", "picker", "sentence_limit"]
