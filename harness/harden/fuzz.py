"""Fuzzing the public entry points with hypothesis: a typed error or correct handling, never a crash.

Targets, each with what counts as correct:

* ``policy.derive.derive_memory`` on tool results of any type and size,
  content type and status (documented never to raise), and the memory line
  rendered from the draft (one line: nothing tool-derived may break it);
* ``policy.lines.inert`` / ``inert_json`` / ``fenced`` / ``error_excerpt``:
  one line out, citations escaped, the fence never closable from inside;
* ``policy.compact``: ``parse_compact(compact_text(x))`` reads back the document;
* ``policy.validate.provider_problems`` on arbitrary message lists: a list
  of problems, never an exception;
* the store, on real Postgres and S3: ``begin_tool_call`` with arguments of
  any JSON shape and size (a file written whole, deep nesting, non-ASCII keys), ``ingest_tool_result`` with any bytes, ``append_message``
  with huge and malformed text, branch graphs with cycles and missing parents,
  unknown ids everywhere (assembly included), and one streamed 1 GB artifact
  (64 MB with ``--quick``). Allowed outcomes: success, or a typed error
  (:class:`store.errors.StoreError`, :class:`policy.errors.PolicyError`,
  pydantic's ``ValidationError``, ``ValueError``/``TypeError`` raised by the
  API's own argument checks); and an error must leave no rows behind.

A *crash* is any other exception, a property that does not hold, or a write
that failed half-way (rows counted before and after).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness.harden.report import Figures
from harness.harden.stack import Stack
from store.writes import NewMessage, NewToolCall

PART = "fuzz"
NOW = datetime(2026, 12, 1, tzinfo=UTC)

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=200)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=30), children, max_size=6),
    max_leaves=40,
)
hostile_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=400) | st.sampled_from([
    "\x00", "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"), "[t:deadbeef]", "```", "\n- [m:",
    "\u2028", "a" * 70_000, "\x1b[2J", "{" * 500, "[" * 2000 + "]" * 2000,
])
raw_results = st.binary(max_size=3000) | hostile_text.map(lambda t: t.encode("utf-8", "surrogatepass")) \
    | json_values.map(lambda v: json.dumps(v).encode()) \
    | st.lists(st.lists(st.text(max_size=12), min_size=1, max_size=5), max_size=30).map(
        lambda rows: "\n".join(",".join(r) for r in rows).encode()) \
    | json_values.map(lambda v: repr(v).encode())
def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = {f"niveau_é{level}": [value]}
    return value


# What a coding agent sends: a file written whole, a patch or a long command (incompressible, several KB to
# 1 MB), deep nesting, non-ASCII keys; before subject keys were bounded the first such call failed ingestion.
call_arguments = st.dictionaries(st.text(max_size=20), json_values, max_size=5) | st.fixed_dictionaries({
    "päth": st.text(max_size=40),
    "content": st.binary(min_size=2_000, max_size=1_000_000).map(lambda b: b.hex()),
    "nested": st.integers(min_value=0, max_value=200).map(_nested),
})
content_types = st.sampled_from(["application/json", "text/csv", "text/plain", "application/octet-stream",
                                 "image/png", "", "text/html; charset=latin-1", "application/x-unknown"])

TYPED: tuple[type[BaseException], ...]


def _typed() -> tuple[type[BaseException], ...]:
    from policy.errors import PolicyError
    from store.errors import StoreError

    try:
        from activities.errors import ActivityError  # type: ignore[attr-defined]
        extra: tuple[type[BaseException], ...] = (ActivityError,)
    except ImportError:
        extra = ()
    return (StoreError, PolicyError, ValidationError, ValueError, TypeError, *extra)


@dataclass
class Tally:
    """Cases run and crashes found, with the first few reproducers per target."""

    figures: Figures
    cases: int = 0
    crashes: int = 0
    by_target: dict[str, list[int]] = field(default_factory=dict)
    shown: dict[str, int] = field(default_factory=dict)

    def ok(self, target: str) -> None:
        self.cases += 1
        self.by_target.setdefault(target, [0, 0])[0] += 1

    def crash(self, target: str, what: str, example: Any) -> None:
        self.cases += 1
        self.crashes += 1
        counts = self.by_target.setdefault(target, [0, 0])
        counts[0] += 1
        counts[1] += 1
        if self.shown.get(target, 0) < 3:
            self.shown[target] = self.shown.get(target, 0) + 1
            self.figures.finding(PART, f"{target}: {what}"[:300], reproducer=repr(example)[:300])


def _examples(strategy: st.SearchStrategy, count: int, seed: int) -> list[Any]:
    """``count`` examples of ``strategy`` drawn by hypothesis (generation only, no shrinking)."""
    out: list[Any] = []

    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: Any) -> None:
        out.append(value)

    collect._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    collect()
    return out


# --------------------------------------------------------------------------- pure targets


def fuzz_pure(tally: Tally, scale: int) -> None:
    """The policy's entry points: thousands of cases, no I/O."""
    from policy.compact import CompactParseError, compact_text, parse_compact, to_json
    from policy.derive import derive_memory
    from policy.payloads import parse_structured
    from policy.enums import ToolCallStatus
    from policy.lines import error_excerpt, fenced, inert, inert_json
    from policy.tools import ToolSpec
    from policy.validate import provider_problems

    spec = ToolSpec(name="harden.fuzz")
    statuses = [ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED]

    for index, (raw, ctype, args) in enumerate(_examples(
            st.tuples(raw_results, content_types, st.dictionaries(st.text(max_size=20), json_values, max_size=4)),
            scale * 3, seed=1)):
        status = statuses[index % 2]
        try:
            draft = derive_memory(spec, str(uuid.uuid4()), args, status, raw, content_type=ctype, observed_at=NOW)
            summary = getattr(draft, "summary", "")
            if not isinstance(summary, str):
                raise AssertionError(f"summary is {type(summary).__name__}")
            line = inert(summary)
            if "\n" in line or "\r" in line:
                raise AssertionError("the memory line spans several lines")
        except Exception as error:  # derive_memory is documented never to raise on a payload
            tally.crash("derive_memory", f"{type(error).__name__}: {error}", (raw[:200], ctype, status.value))
        else:
            tally.ok("derive_memory")

    for text in _examples(hostile_text, scale * 2, seed=2):
        try:
            one = inert(text)
            if any(ch in one for ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
                raise AssertionError("inert() output spans several lines")
            import re
            if re.search(r"(?<!\\)\[[mtcsa]:", one, re.IGNORECASE):
                raise AssertionError("inert() left a citation look-alike unescaped")
            body = fenced(text)
            fence = body.split("\n", 1)[0]
            if any(line.strip() == fence for line in body.split("\n")[1:-1]):
                raise AssertionError("the fence can be closed from inside")
            excerpt = error_excerpt(text, 200)
            if "\n" in excerpt:
                raise AssertionError("error_excerpt() spans several lines")
            as_json = inert_json({"v": text})
            if "\n" in as_json or json.loads(as_json) != {"v": text}:
                raise AssertionError("inert_json() is not one line or does not read back")
        except Exception as error:  # a broken one-line guarantee is what this target hunts
            tally.crash("lines", f"{type(error).__name__}: {error}", text[:200])
        else:
            tally.ok("lines")

    for value in _examples(json_values, scale * 2, seed=3):
        raw = json.dumps(value)
        try:
            compact = compact_text(raw)
            if compact is not None:
                # The comparison of tests/unit/policy/test_compact.py: numbers as the result wrote them.
                back = json.loads(to_json(parse_compact(compact)))
                expected = json.loads(to_json(parse_structured(raw, exact_numbers=True)[0]))
                if back != expected and not _nan_in(value):
                    raise AssertionError(f"parse_compact read back {back!r:.80}, not {expected!r:.80}")
        except CompactParseError as error:
            tally.crash("compact", f"compact text does not parse back: {error}", raw[:200])
        except Exception as error:  # compaction is lossless by contract
            tally.crash("compact", f"{type(error).__name__}: {error}", raw[:200])
        else:
            tally.ok("compact")

    # Message lists in the OpenAI shape (the validator's declared input), with any values in it.
    message = st.fixed_dictionaries({
        "role": st.sampled_from(["system", "user", "assistant", "tool", "developer", ""]),
        "content": st.none() | st.text(max_size=50),
    }, optional={
        "tool_calls": st.lists(st.fixed_dictionaries({
            "id": st.text(max_size=70), "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": st.text(max_size=70), "arguments": st.text(max_size=20)}),
        }), max_size=3),
        "tool_call_id": st.text(max_size=70) | st.none(),
    })
    for messages in _examples(st.lists(message, max_size=8), scale * 2, seed=4):
        try:
            problems = provider_problems(messages)
            if not isinstance(problems, list):
                raise AssertionError("provider_problems did not return a list")
        except Exception as error:  # the validator answers with problems, it must not fail itself
            tally.crash("provider_problems", f"{type(error).__name__}: {error}", messages)
        else:
            tally.ok("provider_problems")


def _nan_in(value: Any) -> bool:
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return any(_nan_in(v) for v in value)
    if isinstance(value, dict):
        return any(_nan_in(v) for v in value.values())
    return False


# --------------------------------------------------------------------------- store targets


async def _rows(stack: Stack, account: str) -> dict[str, int]:
    from sqlalchemy import text

    from harness.harden.isolation import ACCOUNT_TABLES

    async with stack.deps.sessions() as session:
        return {t: int(await session.scalar(text(f"SELECT count(*) FROM {t} WHERE account_id=:a"), {"a": account}))
                for t in ACCOUNT_TABLES}


async def _guard(tally: Tally, stack: Stack, account: str, target: str, example: Any,
                 call: Callable[[], Any], *, writes: bool = True) -> Any:
    """Run one case: success or a typed error with no rows written; anything else is a crash."""
    before = await _rows(stack, account) if writes else None
    try:
        result = await call()
    except _typed() as error:
        if writes and await _rows(stack, account) != before:
            tally.crash(target, f"partial write after {type(error).__name__}: {error}", example)
        else:
            tally.ok(target)
        return None
    except Exception as error:  # untyped: a crash, whatever it is
        tally.crash(target, f"untyped {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
                    example)
        return None
    tally.ok(target)
    return result


async def fuzz_store(stack: Stack, tally: Tally, scale: int, progress: Callable[[str], None]) -> None:
    """The store and activities on real Postgres and S3."""
    from activities.context import assemble_context
    from activities.ingest import ToolOutcome, begin_tool_call, ingest_tool_result
    from policy.enums import MessageRole, RuntimeKind, ToolCallStatus
    from policy.records import EvidenceRequest, GenerationBoundary
    from policy.tools import ToolCatalog, ToolSpec
    from store import branches, conversations, messages

    deps = replace(stack.deps, catalog=ToolCatalog(tools=(ToolSpec(name="harden.fuzz"), *stack.deps.catalog.tools)))
    async with deps.sessions() as session, session.begin():
        account = await conversations.create_account(session, name="harden fuzz")
        conv = await conversations.create_conversation(session, account, title="fuzz")
        participant = (await conversations.add_participant(
            session, account, conv.id, name="Fuzz", role="assistant", provider="scripted", model="echo",
            system_prompt="fuzz")).id
        first = await messages.append_message(session, account, conv.id, NewMessage(
            branch_id=conv.root_branch_id, role=MessageRole.USER, content="start"))
    branch = conv.root_branch_id

    # Tool calls with arguments of any shape, then results of any bytes.
    n = max(10, scale // 20)
    for index, (args, raw, ctype, failed) in enumerate(_examples(
            st.tuples(call_arguments, raw_results, content_types, st.booleans()), n, seed=5)):
        call_id = f"call_fuzz_{index}_{uuid.uuid4().hex[:6]}"
        call = await _guard(tally, stack, account, "begin_tool_call(arguments)", args, lambda: begin_tool_call(
            deps, account, conv.id, NewToolCall(
                branch_id=branch, participant_id=participant, call_id=call_id, name="harden.fuzz", arguments=args,
                runtime_kind=RuntimeKind.CHAT, at=NOW)))
        if call is None:
            continue
        status = ToolCallStatus.FAILED if failed else ToolCallStatus.SUCCEEDED
        await _guard(tally, stack, account, "ingest_tool_result(bytes)", (raw[:200], ctype, status.value),
                     lambda: ingest_tool_result(deps, account, call.id,
                                                ToolOutcome(status=status, result=raw, content_type=ctype),
                                                captured_at=NOW))
    progress(f"harden: fuzz store: tool calls done ({tally.cases} cases so far)")

    # Messages: huge, malformed, with odd roles and labels.
    big = st.sampled_from(["x" * 2_000_000, "\x00nul", "\ud800", "line\r\n" * 10_000, ""])
    for index, (content, label) in enumerate(_examples(st.tuples(hostile_text | big, st.none() | hostile_text),
                                                       max(10, scale // 40), seed=6)):
        async def append(content: str = content, label: str | None = label) -> Any:
            async with deps.sessions() as session, session.begin():
                return await messages.append_message(session, account, conv.id, NewMessage(
                    branch_id=branch, role=MessageRole.USER, content=content, speaker_label=label))
        await _guard(tally, stack, account, "append_message", (content[:80], label), append)

    # Branch graphs: forks at random messages, unknown parents, reparenting into cycles.
    async with deps.sessions() as session:
        message_ids = [first.id]
    known = [branch]
    ops = st.lists(st.tuples(st.sampled_from(["fork", "fork_unknown_parent", "fork_unknown_message", "reparent",
                                              "lineage", "lineage_unknown"]),
                             st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=12)
    for sequence in _examples(ops, max(5, scale // 100), seed=7):
        for op, i, j in sequence:
            a, b = known[i % len(known)], known[j % len(known)]

            async def run(op: str = op, a: str = a, b: str = b) -> Any:
                async with deps.sessions() as session, session.begin():
                    if op == "fork":
                        created = await branches.fork_branch(session, account, conv.id, a, message_ids[0])
                        known.append(created.id)
                        return created
                    if op == "fork_unknown_parent":
                        return await branches.fork_branch(session, account, conv.id, str(uuid.uuid4()), message_ids[0])
                    if op == "fork_unknown_message":
                        return await branches.fork_branch(session, account, conv.id, a, str(uuid.uuid4()))
                    if op == "reparent":
                        return await branches.reparent_branch(session, account, a, b, message_ids[0])
                    if op == "lineage":
                        return await branches.load_lineage(session, account, a)
                    return await branches.load_lineage(session, account, str(uuid.uuid4()))
            await _guard(tally, stack, account, f"branches.{op}", (op, a[:8], b[:8]), run)
            # Every branch must still assemble or refuse with a typed error (a cycle is BranchCycleError).
        for b in known[-3:]:
            boundary = GenerationBoundary(account_id=account, conversation_id=conv.id, branch_id=b,
                                          participant_id=participant, runtime_kind=RuntimeKind.BRANCH_SEND,
                                          provider_route="openai", now=NOW)
            await _guard(tally, stack, account, "assemble_context(branch graph)", b[:8],
                         lambda boundary=boundary: assemble_context(deps, boundary), writes=False)
    progress(f"harden: fuzz store: branch graphs done ({tally.cases} cases so far)")

    # Unknown and malformed ids at every assembly input.
    id_text = st.sampled_from(["", " ", "x" * 10_000, "'; DROP TABLE accounts; --", "\x00", "../../etc/passwd"]) \
        | st.uuids().map(str) | st.text(max_size=40)
    for (c, b, p, evidence, kind, route, budget) in _examples(st.tuples(
            id_text | st.just(conv.id), id_text | st.just(branch), id_text | st.just(participant),
            st.lists(id_text, max_size=3), st.sampled_from(list(RuntimeKind)),
            st.sampled_from(["openai", "anthropic", "", "nonexistent-route"]),
            st.none() | st.integers(-5, 10_000_000)), max(10, scale // 20), seed=8):
        async def assemble(c: str = c, b: str = b, p: str = p, evidence: list[str] = evidence, kind: Any = kind,
                           route: str = route, budget: int | None = budget) -> Any:
            boundary = GenerationBoundary(account_id=account, conversation_id=c, branch_id=b, participant_id=p,
                                          runtime_kind=kind, provider_route=route, token_budget=budget, now=NOW,
                                          evidence_requests=tuple(EvidenceRequest(artifact_id=e) for e in evidence))
            return await assemble_context(deps, boundary)
        await _guard(tally, stack, account, "assemble_context(ids)", (c[:40], b[:40], p[:40], evidence, route, budget),
                     assemble, writes=False)
    progress(f"harden: fuzz store: unknown ids done ({tally.cases} cases so far)")


async def fuzz_stream(stack: Stack, tally: Tally, size: int) -> None:
    """One large artifact streamed into S3 and read back re-hashed: stored exactly, or refused whole."""
    store = stack.deps.artifacts
    account = str(uuid.uuid4())
    block = hashlib.sha256(b"harden").digest() * (1 << 15)  # 1 MiB of deterministic bytes

    class Source(io.RawIOBase):
        def __init__(self) -> None:
            self.left = size
            self.digest = hashlib.sha256()

        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            n = self.left if n < 0 else min(n, self.left)
            chunk = (block * (n // len(block) + 1))[:n]
            self.left -= n
            self.digest.update(chunk)
            return chunk

    source = Source()
    target = f"put_stream({size >> 20} MiB)"
    try:
        ref = await store.put_stream(account, source)
        key = getattr(ref, "key", None) or getattr(ref, "storage_key", None)
        sha = getattr(ref, "sha256", None)
        if sha != source.digest.hexdigest():
            raise AssertionError(f"stored sha256 {sha} differs from the stream's")
        handle = await store.get_file(account, key, sha)
        read_back = hashlib.sha256()
        while chunk := handle.read(1 << 20):
            read_back.update(chunk)
        handle.close()
        if read_back.hexdigest() != sha:
            raise AssertionError("the object read back does not hash to its sha256")
        await store.delete(account, key)
    except _typed() as error:
        tally.ok(target)
        tally.figures.details["fuzz_stream"] = f"refused with {type(error).__name__}: {error}"
    except Exception as error:  # streaming must store exactly or refuse with a typed error
        tally.crash(target, f"{type(error).__name__}: {error}", size)
    else:
        tally.ok(target)
        tally.figures.details["fuzz_stream"] = f"{size} bytes streamed, stored and read back re-hashed"


async def run_fuzz(stack: Stack, figures: Figures, *, quick: bool = False,
                   progress: Callable[[str], None] = lambda line: None) -> None:
    """The fuzz part: sets ``fuzz_cases`` and ``fuzz_crashes``."""
    tally = Tally(figures)
    scale = 300 if quick else 1200
    try:
        await asyncio.to_thread(fuzz_pure, tally, scale)
        progress(f"harden: fuzz pure: {tally.cases} cases, {tally.crashes} crash(es)")
        await fuzz_store(stack, tally, scale, progress)
        await fuzz_stream(stack, tally, (64 if quick else 1024) << 20)
    except Exception:
        progress(traceback.format_exc())
        raise
    figures.details["fuzz_by_target"] = {k: {"cases": v[0], "crashes": v[1]} for k, v in tally.by_target.items()}
    figures.set(fuzz_cases=tally.cases, fuzz_crashes=tally.crashes)
