"""Supersession along each branch's lineage: random fork and refresh histories, every context checked.

A history is a random sequence of steps on one conversation, through the live I/O
steps (``begin_tool_call``, ``ingest_tool_result``, ``fork_branch``,
``assemble_context``): *refresh* re-reads the same record on a branch (a
``crm.get_account`` of ``A-1`` whose result carries a value no other step uses),
updates it (``crm.update_account``: the same record by resource, a write) or fails
reading it (a 403 whose error carries a token no other step uses),
*fork* starts a branch at the newest message of another, *ask* appends a user
message and assembles the participant's context on a branch, fresh the first time
and continuing its epoch after that (the policy decides; a call minutes later
continues, as in a turn).

The model of the history is the lineage itself: a forked branch sees what its
parent saw up to the fork, then only its own refreshes. After every *ask* the
context must show exactly the newest value of that lineage and no other value the
history ever wrote (an older one of its own lineage is superseded, a sibling's is
outside it), and the newest failure after the lineage's last success as open
recovery state, no settled or sibling failure. A **violation** is a context that shows
another value or failure (except where a runtime note says what replaced or settled it),
or not the newest value or open failure.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from activities.context import assemble_context
from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result, record_attempt_failure
from harness.harden.report import Figures
from harness.harden.stack import Stack
from policy.enums import MessageRole, RuntimeKind, ToolCallStatus
from policy.records import GenerationBoundary
from policy.tools import ToolSpec
from store import branches, conversations, messages
from store.writes import NewMessage, NewToolCall

PART = "branches"
SPEC = ToolSpec(name="crm.get_account", result_kind="json", key_args=("account_id",))
WRITE_SPEC = ToolSpec(name="crm.update_account", result_kind="json", key_args=("account_id",))
"""Names the same record (``record:crm.account``, inferred) and writes it: it supersedes by resource."""
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class _History:
    deps: Any
    account: str
    conversation: str
    participant: str
    rng: random.Random
    seen: dict[str, list[str]] = field(default_factory=dict)
    """Branch id -> the values its lineage read, oldest first (the model)."""
    written: set[str] = field(default_factory=set)
    """Every value (``v…``) and failure token (``f…``) the history wrote."""
    call_of: dict[str, str] = field(default_factory=dict)
    clock: int = 0
    steps: list[str] = field(default_factory=list)

    def now(self) -> datetime:
        self.clock += 1
        return T0 + timedelta(seconds=20 * self.clock)

    async def say(self, branch: str, text: str) -> str:
        async with self.deps.sessions() as session, session.begin():
            return (await messages.append_message(session, self.account, self.conversation, NewMessage(
                branch_id=branch, role=MessageRole.USER, content=text))).id

    async def refresh(self, branch: str) -> None:
        """Read the record again, or update it (a write supersedes by resource), or fail trying (a 403)."""
        spec = WRITE_SPEC if self.rng.random() < 0.3 else SPEC
        fails = spec is SPEC and self.rng.random() < 0.2
        token = f"{'f' if fails else 'v'}{len(self.written):02d}x{uuid.uuid4().hex[:6]}"
        arguments = {"account_id": "A-1", **({"tier": token} if spec is WRITE_SPEC else {})}
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        if self.rng.random() < 0.7:  # as in a turn: the model's message asks for the call (a native result)
            async with self.deps.sessions() as session, session.begin():
                await messages.append_message(session, self.account, self.conversation, NewMessage(
                    branch_id=branch, role=MessageRole.ASSISTANT, content="", author_participant_id=self.participant,
                    tool_calls=[{"call_id": call_id, "name": spec.name, "arguments": arguments}]))
        call = await begin_tool_call(self.deps, self.account, self.conversation, NewToolCall(
            branch_id=branch, participant_id=self.participant, call_id=call_id,
            name=spec.name, arguments=arguments, runtime_kind=RuntimeKind.CHAT, at=self.now()))
        at = T0 + timedelta(seconds=20 * self.clock)
        if fails:
            error = f"HTTPError: 403 Forbidden reading A-1 ({token})"
            await record_attempt_failure(self.deps, self.account, call.id, attempt=1, final=True, error=error, at=at)
            outcome = ToolOutcome(status=ToolCallStatus.FAILED, result=error.encode(), content_type="text/plain")
        else:
            outcome = ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=f'{{"id":"A-1","tier":"{token}"}}'.encode(),
                                  content_type="application/json")
        await ingest_tool_result(self.deps, self.account, call.id, outcome, captured_at=at)
        self.written.add(token)
        self.call_of[token] = call.id
        self.seen[branch].append(token)
        self.steps.append(f"{'fail' if fails else spec.name.split('.')[1]} {self._name(branch)} -> {token}")

    async def fork(self, parent: str) -> None:
        at = await self.say(parent, "Let us try another way.")
        async with self.deps.sessions() as session, session.begin():
            child = (await branches.fork_branch(session, self.account, self.conversation, parent, at,
                                                name=f"b{len(self.seen)}")).id
        self.seen[child] = list(self.seen[parent])
        self.steps.append(f"fork {self._name(parent)} -> {self._name(child)}")

    async def ask(self, branch: str) -> list[str]:
        await self.say(branch, "Which tier is A-1 now?")
        boundary = GenerationBoundary(account_id=self.account, conversation_id=self.conversation, branch_id=branch,
                                      participant_id=self.participant, runtime_kind=RuntimeKind.CHAT,
                                      provider_route="local", now=self.now())
        assembled = await assemble_context(self.deps, boundary)
        # What the context says of the record: every message's text (a call's own arguments, what the model
        # asked for, are not a statement of the record's value).
        text = "\n".join(message.content or "" for message in assembled.result.messages)
        epoch = assembled.result.record.epoch
        self.steps.append(f"ask {self._name(branch)} ({epoch.reason[:40] if epoch is not None else 'no epoch'})")
        events = self.seen[branch]
        values = [token for token in events if token.startswith("v")]
        wrong = []
        if values and values[-1] not in text:
            wrong.append(f"newest value {values[-1]} missing")
        wrong += [f"shows {value} ({'older on its lineage' if value in values else 'not on its lineage'})"
                  for value in sorted(v for v in self.written - set(values[-1:]) if v.startswith("v"))
                  if value in text and not _noted(list(assembled.result.messages), value)]
        # A failure stays open until a later success on its lineage settles it; then it is settled.
        last_ok = max((i for i, token in enumerate(events) if token.startswith("v")), default=-1)
        open_failures = [token for token in events[last_ok + 1:] if token.startswith("f")]
        if open_failures and open_failures[-1] not in text:
            wrong.append(f"open failure {open_failures[-1]} missing")
        for token in sorted(t for t in self.written if t.startswith("f") and t not in open_failures):
            short = self.call_of[token].removeprefix("call_")[:8]
            if token in text and not re.search(r"(supersedes|completes what)[^\n]*\[t:" + short, text):
                wrong.append(f"shows failure {token} ({'settled' if token in events else 'not on its lineage'})")
        return wrong

    def _name(self, branch: str) -> str:
        return f"b{list(self.seen).index(branch)}"


_MEMORY_LINE = re.compile(r"^- \[(?P<ref>m:[0-9a-f]+)\] (?P<rest>.*)$", re.MULTILINE)
_SUPERSEDES = re.compile(r"Runtime note: the result of \[t:[0-9a-f]+\] supersedes (?P<old>[^\n]*?) in the context")


def _noted(messages: list[Any], value: str) -> bool:
    """Whether ``value`` is shown only in records a runtime note says are superseded: a continued epoch keeps
    its prefix byte for byte and says which of its records an appended result replaced (a memory line
    ``[m:…]`` or a native result ``[t:…]``)."""
    notes = " ".join(found.group("old") for m in messages for found in _SUPERSEDES.finditer(m.content or ""))
    refs: list[str] = []
    for message in messages:
        content = message.content or ""
        if value not in content:
            continue
        if message.role is MessageRole.TOOL and message.tool_call_id and value in content:
            refs.append("t:" + message.tool_call_id.removeprefix("call_")[:8])
            continue
        lines = [found for found in _MEMORY_LINE.finditer(content) if value in found.group("rest")]
        if value in _MEMORY_LINE.sub("", content):
            return False  # shown somewhere that is not a record line
        refs += [found.group("ref") for found in lines]
    return bool(refs) and all(f"[{ref}]" in notes for ref in refs)


async def run_history(deps: Any, seed: int, steps: int = 12) -> tuple[int, list[dict[str, Any]]]:
    """One random history; returns ``(contexts checked, violations)``."""
    rng = random.Random(seed)
    deps = replace(deps, catalog=deps.catalog.model_copy(update={"tools": (*deps.catalog.tools, SPEC, WRITE_SPEC)}))
    async with deps.sessions() as session, session.begin():
        account = await conversations.create_account(session, name=f"harden branches {seed}")
        conversation = await conversations.create_conversation(session, account, title="fork and refresh")
        participant = await conversations.add_participant(session, account, conversation.id, name="Assistant",
                                                          provider="scripted", model="m")
    history = _History(deps, account, conversation.id, participant.id, rng)
    history.seen[conversation.root_branch_id] = []
    await history.refresh(conversation.root_branch_id)  # a value read before any fork
    checked, violations = 0, []
    for _ in range(steps):
        branch = rng.choice(list(history.seen))
        step = rng.choices(("refresh", "fork", "ask"), weights=(4, 2, 4))[0]
        if step == "refresh":
            await history.refresh(branch)
        elif step == "fork" and len(history.seen) < 5:
            await history.fork(branch)
        else:
            wrong = await history.ask(branch)
            checked += 1
            violations += [{"seed": seed, "branch": history._name(branch), "what": what,
                            "steps": list(history.steps)} for what in wrong]
    for branch in list(history.seen):  # every branch once more at the end
        wrong = await history.ask(branch)
        checked += 1
        violations += [{"seed": seed, "branch": history._name(branch), "what": what, "steps": list(history.steps)}
                       for what in wrong]
    return checked, violations


async def run_branches(stack: Stack, figures: Figures, *, quick: bool = False,
                       progress: Callable[[str], None] = lambda line: None) -> None:
    """Random histories (40, 10 quick); fills ``branch_histories`` and ``branch_violations``."""
    histories = 10 if quick else 40
    checked, violations = 0, []
    for seed in range(histories):
        count, found = await run_history(stack.deps, seed)
        checked += count
        violations += found
    for violation in violations[:20]:
        figures.finding(PART, "a branch's context shows a value its lineage superseded or never read", **violation)
    figures.details["branch_contexts_checked"] = checked
    progress(f"harden: branches: {histories} histories, {checked} contexts, {len(violations)} violations")
    figures.set(branch_histories=histories, branch_violations=len(violations))


__all__ = ["run_branches", "run_history"]
