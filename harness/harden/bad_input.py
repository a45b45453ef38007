"""Bad input to the CLI: every error is one line, a non-zero exit, and nothing written.

Each case runs ``dossier ...`` as a subprocess against the suite's private
stack (its services given as external addresses, so the CLI starts nothing)
and counts the graph's rows and the bucket's objects before and after. A case
is **unclean** when the command exits 0, prints anything but exactly one
non-empty line on stderr, prints a traceback, or leaves a row or an object
behind. One good case checks that ``dossier chat -`` reads the message from
stdin (reported as a detail, it is not a bad input).
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.harden.isolation import run_cli, table_counts
from harness.harden.report import Figures
from harness.harden.stack import Stack
from store.writes import NewMessage

PART = "bad_input"


@dataclass(frozen=True)
class BadInput:
    """One bad invocation."""

    name: str
    args: tuple[str, ...]
    stdin: str | bytes | None = None
    env: tuple[tuple[str, str], ...] = ()
    may_accept: str | None = None
    """Malformed but repairable: accepting it is clean when the stored message contains this text and no NUL."""


def cases(known_conversation: str, known_message: str) -> list[BadInput]:
    """Bad invocations of every command that takes input (the first 14 are the quick set)."""
    unknown = str(uuid.uuid4())
    return [
        # --no-wait: a message that is wrongly accepted returns at once instead of waiting for a worker.
        BadInput("chat empty message", ("chat", "--no-wait", "")),
        BadInput("chat blank message", ("chat", "--no-wait", "   \n\t ")),
        BadInput("chat - with empty stdin", ("chat", "--no-wait", "-"), stdin=""),
        BadInput("chat - with NUL on stdin", ("chat", "--no-wait", "-"), stdin="hello\x00world", may_accept="world"),
        BadInput("chat - with invalid UTF-8 on stdin", ("chat", "--no-wait", "-"), stdin=b"\xff\xfe\xc3\x28 hi",
                 may_accept=" hi"),
        BadInput("chat unknown provider", ("chat", "--model", "nonsense:model", "hi")),
        BadInput("chat unknown scripted model", ("chat", "--model", "scripted:nope", "hi")),
        BadInput("chat malformed conversation id", ("chat", "--conversation", "not-an-id", "hi")),
        BadInput("chat unknown conversation", ("chat", "--conversation", unknown, "hi")),
        BadInput("chat --branch without --conversation", ("chat", "--branch", unknown, "hi")),
        BadInput("answer unknown tool call", ("answer", unknown, "{}")),
        BadInput("answer malformed JSON", ("answer", unknown, "{not json")),
        BadInput("missing message argument", ("chat",)),
        BadInput("unknown command", ("frobnicate",)),
        BadInput("chat unknown branch", ("chat", "--conversation", known_conversation, "--branch", unknown, "hi")),
        BadInput("chat model spec without name", ("chat", "--model", "scripted:", "hi")),
        BadInput("branch fork unknown message", ("branch", "fork", "--conversation", known_conversation, "--at",
                                                  unknown)),
        BadInput("branch fork malformed ids", ("branch", "fork", "--conversation", "x", "--at", "y")),
        BadInput("multi without --model", ("multi", "hi")),
        BadInput("multi unknown model", ("multi", "--model", "scripted:echo", "--model", "bogus:x", "hi")),
        BadInput("multi empty message", ("multi", "--model", "scripted:echo", "")),
        BadInput("discuss zero rounds", ("discuss", "--model", "scripted:panelist", "--rounds", "0", "topic")),
        BadInput("discuss negative rounds", ("discuss", "--model", "scripted:panelist", "--rounds", "-3", "topic")),
        BadInput("discuss non-numeric rounds", ("discuss", "--model", "scripted:panelist", "--rounds", "two", "t")),
        BadInput("discuss empty topic", ("discuss", "--model", "scripted:panelist", "")),
        BadInput("subagents task without =", ("subagents", "--task", "scripted:researcher", "hi")),
        BadInput("subagents empty task", ("subagents", "--task", "scripted:researcher=", "hi")),
        BadInput("subagents unknown child model", ("subagents", "--task", "nope:x=do it", "hi")),
        BadInput("subagents negative timeout", ("subagents", "--child-timeout", "-5", "--task",
                                                "scripted:researcher=x", "hi")),
        BadInput("schedule zero interval", ("schedule", "create", "h-zero", "--every", "0", "p")),
        BadInput("schedule negative interval", ("schedule", "create", "h-neg", "--every", "-10", "p")),
        BadInput("schedule empty prompt", ("schedule", "create", "h-empty", "--every", "60", "")),
        BadInput("schedule unknown model", ("schedule", "create", "h-model", "--every", "60", "--model", "x:y", "p")),
        BadInput("schedule trigger unknown", ("schedule", "trigger", f"nope-{unknown[:8]}")),
        BadInput("schedule pause unknown", ("schedule", "pause", f"nope-{unknown[:8]}")),
        BadInput("schedule delete unknown", ("schedule", "delete", f"nope-{unknown[:8]}")),
        BadInput("runs malformed conversation", ("runs", "--conversation", "'; DROP TABLE runs; --")),
        BadInput("services up unknown service", ("services", "up", "mysql")),
        BadInput("DATABASE_URL of another database kind", ("runs",), env=(("DATABASE_URL", "mysql://u@h/db"),)),
        BadInput("S3_ENDPOINT with a scheme", ("runs",), env=(("S3_ENDPOINT", "http://127.0.0.1:1"),)),
        BadInput("bad TEMPORAL_UI_PORT", ("runs",), env=(("TEMPORAL_UI_PORT", "99999999"),)),
        BadInput("retention --now without a time zone", ("retention", "run", "--now", "2027-01-01")),
        BadInput("retention --now in year 1", ("retention", "run", "--now", "0001-01-01T00:00:00+00:00")),
        BadInput("retention --now past year 9999", ("retention", "run", "--now", "9999-12-31T23:59:59+00:00")),
        BadInput("agent naming skills with no skills folder", ("chat", "--model", "analyst", "hi"),
                 env=(("DOSSIER_AGENTS_FILE", _skills_without_folder()),)),
    ]


def _skills_without_folder() -> str:
    """An agents file whose agent names a skill while no skills folder is configured."""
    path = Path(tempfile.mkdtemp(prefix="harden-agents-")) / "agents.toml"
    path.write_text('[agents.analyst]\nmodel = "scripted:echo"\nskills = ["csv-analysis"]\n')
    return str(path)


QUICK = 14
TIMEOUT = 25.0
"""Seconds before a bad input that was accepted (and now waits for its turn) counts as unclean."""


async def _objects(stack: Stack) -> int:
    def count() -> int:
        from dossier.services.s3 import client as s3_client

        e = stack.endpoints
        s3 = s3_client(e.s3_endpoint, e.s3_access_key, e.s3_secret_key, region=e.s3_region, secure=e.s3_secure)
        return sum(1 for _ in s3.list_objects(e.s3_bucket, recursive=True))
    return await asyncio.to_thread(count)


def _unclean(returncode: int, stderr: str) -> list[str]:
    why = []
    if returncode == 0:
        why.append("exit 0")
    lines = [line for line in stderr.splitlines() if line.strip()]
    if "Traceback (most recent call last)" in stderr:
        why.append("traceback")
    if len(lines) != 1:
        why.append(f"{len(lines)} stderr lines")
    return why


async def run_bad_input(stack: Stack, figures: Figures, *, quick: bool = False,
                        progress: Callable[[str], None] = lambda line: None) -> None:
    """The bad-input part: sets ``bad_inputs`` and ``bad_inputs_unclean``."""
    from dossier.client import ACCOUNT_FILE
    from store import conversations, messages
    from policy.enums import MessageRole

    home = Path(tempfile.mkdtemp(prefix="harden-bad-", dir=stack.settings.dossier_home))
    async with stack.deps.sessions() as session, session.begin():
        account = await conversations.create_account(session, name="harden bad input")
        conv = await conversations.create_conversation(session, account, title="bad input")
        message = await messages.append_message(session, account, conv.id, NewMessage(
            branch_id=conv.root_branch_id, role=MessageRole.USER, content="hello"))
    (home / ACCOUNT_FILE).write_text(account + "\n")
    selected = cases(conv.id, message.id)
    if quick:
        selected = selected[:QUICK]
    unclean = 0
    for case in selected:
        rows_before, objects_before = await table_counts(stack), await _objects(stack)
        stdin = case.stdin
        done = await asyncio.to_thread(_run, stack, case, home, stdin)
        rows_after, objects_after = await table_counts(stack), await _objects(stack)
        why = _unclean(done[0], done[2])
        if case.may_accept is not None and done[0] == 0 and "still running" not in done[2]:
            why = await _stored_cleanly(stack, account, case.may_accept)
        elif rows_after != rows_before:
            why.append("wrote " + ", ".join(f"{t} {rows_after[t] - rows_before[t]:+d}" for t in rows_before
                                             if rows_after[t] != rows_before[t]))
        if objects_after != objects_before and case.may_accept is None:
            why.append(f"wrote {objects_after - objects_before:+d} S3 object(s)")
        if why:
            unclean += 1
            env = " ".join(f"{k}={v}" for k, v in case.env)
            figures.finding(PART, f"{case.name}: {'; '.join(why)}",
                            reproducer=(f"{env} " if env else "") + "dossier " + " ".join(repr(a) for a in case.args)
                            + (f" < {case.stdin!r}" if case.stdin is not None else ""),
                            stderr=done[2].strip()[-300:])
    figures.set(bad_inputs=len(selected), bad_inputs_unclean=unclean)
    # The good counterpart of the stdin cases: `dossier chat -` takes its message from stdin.
    rows_before = await table_counts(stack)
    code, out, err = await asyncio.to_thread(_run, stack, BadInput("stdin", ("chat", "--no-wait", "-")), home,
                                             "message from stdin")
    async with stack.deps.sessions() as session:
        from sqlalchemy import text
        found = await session.scalar(text("SELECT count(*) FROM messages WHERE account_id=:a AND content=:c"),
                                     {"a": account, "c": "message from stdin"})
    figures.details["chat_stdin"] = ("reads the message from stdin" if code == 0 and found
                                     else f"does not: exit {code}, {err.strip()[-200:]!r}")
    progress(f"harden: bad input: {unclean}/{len(selected)} unclean; chat -: {figures.details['chat_stdin']}")


async def _stored_cleanly(stack: Stack, account: str, needle: str) -> list[str]:
    """An accepted repairable input: its message must be stored as valid text without NUL."""
    from sqlalchemy import text

    async with stack.deps.sessions() as session:
        rows = (await session.execute(text("SELECT content FROM messages WHERE account_id=:a AND strpos(content, :n) > 0"),
                                      {"a": account, "n": needle})).all()
    if not rows:
        return ["accepted, but the message was not stored"]
    if any("\x00" in r[0] for r in rows):
        return ["stored a NUL"]
    return []


def _run(stack: Stack, case: BadInput, home: Path, stdin: str | bytes | None) -> tuple[int, str, str]:
    import subprocess
    import sys

    env = stack.env(DOSSIER_HOME=str(home), **dict(case.env))
    try:
        done = subprocess.run([sys.executable, "-m", "dossier.cli", *case.args],
                              input=stdin.encode() if isinstance(stdin, str) else stdin, capture_output=True,
                              timeout=TIMEOUT, env=env, cwd=str(home))
    except subprocess.TimeoutExpired as expired:
        # No worker polls the suite's stack: a command that accepted the input waits for a turn forever.
        err = (expired.stderr or b"").decode("utf-8", "replace")
        return 0, "", err + f"\n[harden: still running after {TIMEOUT:.0f}s: the input was accepted]"
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
