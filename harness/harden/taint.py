"""Privacy taint, as properties: generated graphs, every context checked, every derived record checked.

A case is a generated conversation: participants on different provider routes
(``local``, ``openai``, ``public-only`` and an unknown route that fails
closed), branches forked from each other, tool calls of tools of every privacy
class (and of a tool the catalog does not know), failed calls, generated
files, subagent children whose reports are promoted to their parent, memories
derived from several artifacts, checkpoints and skill states built from other
records, user memories and user messages.

Every record that brings data in carries a unique marker (``MRK00042Z``) whose
*origin* class is the class of the data it stands for. A model is assumed to
copy everything it was shown into everything it writes (the worst case a
sound rule must cover): a tool call's arguments, the error that quotes them, a
generated file's name, a subagent's report and a checkpoint's state all carry
every marker of the context the model was assembled. Derived records get
their class from the runtime's own rules (:func:`policy.taint.context_sources`
and :func:`policy.taint.context_privacy` for what a model run was shown, the
store's joins through :func:`policy.enums.strictest_privacy`, the catalog's
fail-closed default for an unknown tool, :func:`policy.derive.memory_record`).

Two properties are checked on every case:

(a) no context assembled for a participant contains a marker whose origin class
    the participant's route may not receive;
(b) no record is looser than the origin class of any marker it carries (no
    derived record is looser than its sources).

:func:`run_taint` runs N cases and returns ``(cases, violations)`` for
``dossier harden``; ``tests/unit/policy/test_taint_properties.py`` runs the same
cases under hypothesis, which shrinks a failure to a small graph.

Not covered here, by design of this runtime version: an assistant's *answer
text* is a transcript message, and every transcript message is gated as user
data (``policy/transcript.py``), so generated answers carry no markers here.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy.assembler import assemble
from policy.derive import derive_memory, memory_record
from policy.taint import context_privacy, context_sources
from policy.enums import (
    PRIVACY_RANK,
    FreshnessClass,
    MessageRole,
    PrivacyClass,
    PromotionPolicy,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
    at_least,
    strictest_privacy,
)
from policy.policy import DEFAULT_POLICY, FAIL_CLOSED_ROUTE
from policy.records import (
    ArtifactRecord,
    CandidateSet,
    CheckpointRecord,
    GenerationBoundary,
    Lineage,
    LineageStep,
    MessageRecord,
    ParticipantRecord,
    SkillStateRecord,
    ToolCallRecord,
    ToolCallRequest,
    ToolMemoryRecord,
    UserMemoryRecord,
)
from policy.tools import ToolCatalog, ToolSpec, default_visibility

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MARKER = re.compile(r"MRK\d{5}Z")
ROUTES = ("local", "openai", "public-only", "unlisted")
"""Participant routes; ``unlisted`` is not in the policy, so it fails closed to public records."""
UNKNOWN_TOOL = "mystery.lookup"
"""A tool the catalog does not declare: its results may be anything."""
CATALOG = ToolCatalog(tools=(
    ToolSpec(name="web.search", result_kind="text", privacy=PrivacyClass.PUBLIC),
    ToolSpec(name="notes.read", result_kind="text", privacy=PrivacyClass.USER),
    ToolSpec(name="crm.get", result_kind="json", privacy=PrivacyClass.OAUTH),
    ToolSpec(name="gmail.read", result_kind="text", privacy=PrivacyClass.GOOGLE_DERIVED),
    ToolSpec(name="vault.peek", result_kind="text", privacy=PrivacyClass.SECRET_ADJACENT),
    ToolSpec(name="files.write", result_kind="file", privacy=PrivacyClass.USER, freshness=FreshnessClass.PERMANENT),
))
TOOLS = (*(spec.name for spec in CATALOG.tools), UNKNOWN_TOOL)
CLASSES = tuple(PrivacyClass)


def _counter(text: str) -> int:
    return len(text) // 4 + 1


@dataclass
class World:
    """One generated conversation, as the policy sees its graph."""

    participants: list[ParticipantRecord] = field(default_factory=list)
    routes: dict[str, str] = field(default_factory=dict)
    children: dict[str, str] = field(default_factory=dict)
    """Subagent child -> parent."""
    branches: dict[str, tuple[str | None, int | None]] = field(default_factory=lambda: {"b0": (None, None)})
    """Branch -> (parent, fork seq)."""
    messages: list[MessageRecord] = field(default_factory=list)
    calls: list[ToolCallRecord] = field(default_factory=list)
    artifacts: list[ArtifactRecord] = field(default_factory=list)
    memories: list[ToolMemoryRecord] = field(default_factory=list)
    checkpoints: list[CheckpointRecord] = field(default_factory=list)
    skills: list[SkillStateRecord] = field(default_factory=list)
    user_memories: list[UserMemoryRecord] = field(default_factory=list)
    raw: dict[str, bytes] = field(default_factory=dict)
    origin: dict[str, PrivacyClass] = field(default_factory=dict)
    """Marker -> the class of the data it stands for."""
    run_classes: dict[str, list[PrivacyClass]] = field(default_factory=dict)
    """Participant -> the context class of each of its model runs."""
    seq: int = 0
    serial: int = 0
    violations: list[str] = field(default_factory=list)
    contexts: int = 0

    # ------------------------------------------------------------------ building

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def marker(self, privacy: PrivacyClass) -> str:
        self.serial += 1
        mark = f"MRK{self.serial:05d}Z"
        self.origin[mark] = privacy
        return mark

    def lineage(self, branch: str) -> Lineage:
        steps: list[LineageStep] = []
        until: int | None = None
        current: str | None = branch
        while current is not None:
            steps.append(LineageStep(branch_id=current, until_seq=until))
            parent, fork = self.branches[current]
            current, until = parent, fork
        return Lineage(steps=tuple(reversed(steps)))

    def candidates(self, branch: str) -> CandidateSet:
        return CandidateSet(
            snapshot_seq=self.seq, lineage=self.lineage(branch), participants=tuple(self.participants),
            messages=tuple(self.messages), tool_calls=tuple(self.calls), artifacts=tuple(self.artifacts),
            tool_memories=tuple(self.memories), user_memories=tuple(self.user_memories),
            skill_states=tuple(self.skills), checkpoints=tuple(self.checkpoints),
        )

    def route_of(self, participant: str):
        return DEFAULT_POLICY.route(self.routes[participant]) or FAIL_CLOSED_ROUTE

    # ------------------------------------------------------------------ the model's view

    def view(self, participant: str, branch: str) -> tuple[PrivacyClass, set[str]]:
        """Assemble ``participant``'s context, check property (a), and return its class and markers."""
        kind = RuntimeKind.SUBAGENT_CHILD if participant in self.children else RuntimeKind.CHAT
        boundary = GenerationBoundary(
            account_id="a", conversation_id="c", branch_id=branch, participant_id=participant,
            runtime_kind=kind, provider_route=self.routes[participant], token_budget=100_000, now=NOW,
        )
        result = assemble(DEFAULT_POLICY, boundary, self.candidates(branch), _counter, self.raw)
        self.contexts += 1
        text = "\n".join(json.dumps(m.to_openai(), ensure_ascii=False) for m in result.messages)
        seen = set(MARKER.findall(text))
        route = self.route_of(participant)
        for mark in sorted(seen):
            if self.origin[mark] not in route.allowed:
                self.violations.append(
                    f"(a) {participant} on route {route.name} was shown {mark} "
                    f"of {self.origin[mark].value} data")
        sources = context_sources(result.record.selected_refs, result.record.rehydrated_refs, result.decisions)
        privacy = context_privacy(sources, self.ref_classes(sources.arguments_only))
        self.run_classes.setdefault(participant, []).append(privacy)
        return privacy, seen

    def ref_classes(self, arguments_only: frozenset[str]) -> dict[str, PrivacyClass]:
        """Each record's class by ref, as :func:`store.taint.assembly_privacy` reads them from the graph."""
        classes: dict[str, PrivacyClass] = {}
        results = {a.tool_call_id: a.privacy for a in self.artifacts}
        for call in self.calls:
            ref = f"tool_call:{call.id}"
            classes[ref] = call.privacy if ref in arguments_only or call.id not in results \
                else strictest_privacy((call.privacy, results[call.id]))
        for kind, records in (("memory", self.memories), ("artifact", self.artifacts),
                              ("checkpoint", self.checkpoints), ("skill", self.skills),
                              ("user_memory", self.user_memories)):
            classes.update({f"{kind}:{r.id}": r.privacy for r in records})
        return classes

    # ------------------------------------------------------------------ steps

    def user_says(self, branch: str) -> None:
        mark = self.marker(PrivacyClass.USER)
        self.messages.append(MessageRecord(id=f"msg{self.serial}", branch_id=branch, seq=self.next_seq(),
                                           role=MessageRole.USER, content=f"please look at {mark}"))

    def fork(self, branch: str) -> str:
        name = f"b{len(self.branches)}"
        self.branches[name] = (branch, self.seq)
        return name

    def tool_step(self, participant: str, branch: str, tool: str, fails: bool, unknown_class: PrivacyClass) -> None:
        """One model run: assemble, then call ``tool`` with every marker it was shown in the arguments."""
        context, seen = self.view(participant, branch)
        spec = CATALOG.spec(tool)
        child = participant in self.children
        kind = RuntimeKind.SUBAGENT_CHILD if child else RuntimeKind.CHAT
        n = self.next_seq()
        copied = " ".join(sorted(seen))
        arguments = {"name": f"out{n}.md", "content": copied} if tool == "files.write" else {"query": copied}
        # store.tools.record_tool_call: the tool's class joined with what the run was shown.
        privacy = at_least(spec.privacy, context)
        call = ToolCallRecord(
            id=f"tc{n}", call_id=f"call{n}", name=tool, arguments=arguments,
            status=ToolCallStatus.FAILED if fails else ToolCallStatus.SUCCEEDED, branch_id=branch, seq=n,
            participant_id=participant, runtime_kind=kind, retry_critical=fails,
            last_error=f"ValueError: cannot use {copied}" if fails else None,
            visibility=default_visibility(kind), privacy=privacy,
        )
        self.calls.append(call)
        self.messages.append(MessageRecord(
            id=f"step{n}", branch_id=branch, seq=self.next_seq(), role=MessageRole.ASSISTANT, content="",
            author_participant_id=participant, visibility=VisibilityScope.PARTICIPANT_PRIVATE if child
            else VisibilityScope.BRANCH, tool_calls=(ToolCallRequest(call_id=call.call_id, name=tool,
                                                                     arguments=arguments),)))
        if fails:
            raw, content_type = (call.last_error or "").encode(), "text/plain"
        elif tool == "files.write":
            raw = json.dumps({"name": arguments["name"] + " " + copied, "bytes": len(copied)}).encode()
            content_type = "application/vnd.dossier.file+json"
        else:
            fresh = self.marker(spec.privacy if tool != UNKNOWN_TOOL else unknown_class)
            raw = (json.dumps({"id": f"r{n}", "value": fresh}) if spec.result_kind == "json"
                   else f"result {fresh} for {copied}").encode()
            content_type = "application/json" if spec.result_kind == "json" else "text/plain"
        m = self.next_seq()
        # store.tools.ArtifactCapture.row: a result is never looser than its call.
        artifact = ArtifactRecord(
            id=f"ar{m}", tool_call_id=call.id, call_id=call.call_id, tool_name=tool, status=call.status,
            branch_id=branch, seq=m, owner_participant_id=participant, runtime_kind=kind,
            visibility=call.visibility, privacy=at_least(spec.privacy, call.privacy), content_type=content_type,
            sha256=hashlib.sha256(raw).hexdigest(), result_bytes=len(raw), arguments_bytes=10,
            storage="inline", captured_at=NOW - timedelta(minutes=1),
            promotion=PromotionPolicy.ON_COMPLETION if child else PromotionPolicy.NONE,
        )
        self.artifacts.append(artifact)
        self.raw[artifact.id] = raw
        draft = derive_memory(spec, artifact.id, arguments, call.status, raw, content_type=content_type,
                              observed_at=artifact.captured_at)
        memory = memory_record(draft, artifact, memory_id=f"me{m}")
        self.store_memory(memory.model_copy(update={"seq": self.next_seq()}))

    def store_memory(self, memory: ToolMemoryRecord) -> None:
        """:func:`store.tool_memories.insert_tool_memory`: the class raised to the strictest of its sources."""
        sources = [a.privacy for a in self.artifacts if a.id in memory.source_artifact_ids]
        sources += [m.privacy for m in self.memories if m.id in memory.promoted_from]
        self.memories.append(memory.model_copy(update={"privacy": strictest_privacy((memory.privacy, *sources))}))

    def combine(self, participant: str, branch: str, picks: list[int], declared: PrivacyClass) -> None:
        """A memory built from several artifacts (its declared class may be looser than theirs)."""
        if not self.memories:
            return
        chosen = [self.memories[i % len(self.memories)] for i in picks]
        n = self.next_seq()
        self.store_memory(ToolMemoryRecord(
            id=f"mc{n}", branch_id=branch, seq=n, owner_participant_id=participant,
            source_artifact_ids=tuple(sorted({a for m in chosen for a in m.source_artifact_ids})),
            source_tool="combine", subject_key=f"combine:{n}", title=f"combined {n}",
            summary=" + ".join(m.summary for m in chosen), visibility=VisibilityScope.BRANCH, privacy=declared,
            freshness=FreshnessClass.DURABLE, observed_at=NOW - timedelta(minutes=1),
        ))

    def promote(self, child: str, branch: str) -> None:
        """:func:`activities.promotion.promote_child_results`: the report, then file handles and failures."""
        parent = self.children[child]
        _, seen = self.view(child, branch)  # the report is written from the child's last context
        produced = [c.privacy for c in self.calls if c.participant_id == child]
        produced += [a.privacy for a in self.artifacts if a.owner_participant_id == child]
        # store.taint.participant_privacy, at least user (a report is a message).
        report_class = at_least(PrivacyClass.USER, strictest_privacy(self.run_classes[child] + produced))
        n = self.next_seq()
        report = f"report {' '.join(sorted(seen))}"
        raw = report.encode()
        artifact = ArtifactRecord(
            id=f"rep{n}", tool_call_id=f"reptc{n}", call_id=f"repcall{n}", tool_name="subagent.report",
            status=ToolCallStatus.SUCCEEDED, branch_id=branch, seq=n, owner_participant_id=child,
            runtime_kind=RuntimeKind.SUBAGENT_CHILD, visibility=VisibilityScope.PARTICIPANT_PRIVATE,
            privacy=report_class, content_type="text/plain", sha256=hashlib.sha256(raw).hexdigest(),
            result_bytes=len(raw), arguments_bytes=2, storage="inline", captured_at=NOW - timedelta(minutes=1),
            promotion=PromotionPolicy.ON_COMPLETION,
        )
        self.artifacts.append(artifact)
        self.raw[artifact.id] = raw
        promoted = [self._promoted(f"pr{n}", artifact.id, branch, parent, report, artifact.privacy, ())]
        for memory in list(self.memories):
            source = next((a for a in self.artifacts if a.id in memory.source_artifact_ids), None)
            if memory.owner_participant_id != child or source is None or memory.promoted_from:
                continue
            if "file" in memory.payload or source.status is ToolCallStatus.FAILED:
                promoted.append(self._promoted(f"pf{memory.id}", source.id, branch, parent,
                                               f"from subagent: {memory.summary}", memory.privacy, (memory.id,)))
        for memory in promoted:
            if all(m.id != memory.id for m in self.memories):
                self.store_memory(memory.model_copy(update={"seq": self.next_seq()}))

    @staticmethod
    def _promoted(memory_id: str, artifact_id: str, branch: str, parent: str, summary: str,
                  privacy: PrivacyClass, promoted_from: tuple[str, ...]) -> ToolMemoryRecord:
        return ToolMemoryRecord(
            id=memory_id, branch_id=branch, seq=0, owner_participant_id=parent,
            runtime_kind=RuntimeKind.SUBAGENT_CHILD, source_artifact_ids=(artifact_id,), source_tool="promoted",
            subject_key=f"promoted:{memory_id}", title=f"promoted {memory_id}", summary=summary,
            visibility=VisibilityScope.BRANCH, privacy=privacy, freshness=FreshnessClass.DURABLE,
            observed_at=NOW - timedelta(minutes=1), promoted_from=promoted_from,
        )

    def checkpoint(self, participant: str, branch: str, picks: list[int]) -> None:
        """A checkpoint relying on some memories (:func:`store.checkpoints.put_checkpoint`)."""
        if not self.memories:
            return
        chosen = [self.memories[i % len(self.memories)] for i in picks]
        n = self.next_seq()
        privacy = at_least(PrivacyClass.USER, strictest_privacy([m.privacy for m in chosen]))
        self.checkpoints.append(CheckpointRecord(
            id=f"ck{n}", branch_id=branch, seq=n, participant_id=participant, kind="tool_loop",
            state={"next_step": " ".join(m.summary for m in chosen)}, references=tuple(m.id for m in chosen),
            privacy=privacy,
        ))

    def skill_or_fact(self, participant: str, branch: str, picks: list[int], as_skill: bool) -> None:
        """Skill state or a user memory built from memories (``derived_from``)."""
        if not self.memories:
            return
        chosen = [self.memories[i % len(self.memories)] for i in picks]
        n = self.next_seq()
        privacy = at_least(PrivacyClass.USER, strictest_privacy([m.privacy for m in chosen]))
        text = " ".join(MARKER.findall(" ".join(m.summary for m in chosen)))
        if as_skill:
            self.skills.append(SkillStateRecord(id=f"sk{n}", branch_id=branch, seq=n, participant_id=participant,
                                                skill=f"s{n}", state={"notes": text}, privacy=privacy))
        else:
            self.user_memories.append(UserMemoryRecord(id=f"um{n}", seq=n, text=f"user likes {text}",
                                                       privacy=privacy))

    # ------------------------------------------------------------------ property (b)

    def check_records(self) -> None:
        """No record is looser than the origin of any marker it carries."""
        groups: list[tuple[str, Any, PrivacyClass]] = []
        groups += [(f"tool_call:{r.id}", r, r.privacy) for r in self.calls]
        groups += [(f"artifact:{r.id}", r, r.privacy) for r in self.artifacts]
        groups += [(f"memory:{r.id}", r, r.privacy) for r in self.memories]
        groups += [(f"checkpoint:{r.id}", r, r.privacy) for r in self.checkpoints]
        groups += [(f"skill:{r.id}", r, r.privacy) for r in self.skills]
        groups += [(f"user_memory:{r.id}", r, r.privacy) for r in self.user_memories]
        for ref, record, privacy in groups:
            text = record.model_dump_json()
            if ref.startswith("artifact:"):
                text += self.raw[record.id].decode("utf-8", "replace")
            for mark in sorted(set(MARKER.findall(text))):
                if PRIVACY_RANK[self.origin[mark]] > PRIVACY_RANK[privacy]:
                    self.violations.append(f"(b) {ref} is {privacy.value} but carries {mark} "
                                           f"of {self.origin[mark].value} data")


# --------------------------------------------------------------------------- generation

_STEP = st.one_of(
    st.tuples(st.just("say"), st.integers(0, 9)),
    st.tuples(st.just("fork"), st.integers(0, 9)),
    st.tuples(st.just("tool"), st.integers(0, 9), st.integers(0, 9), st.sampled_from(TOOLS), st.booleans(),
              st.sampled_from(CLASSES)),
    st.tuples(st.just("combine"), st.integers(0, 9), st.integers(0, 9), st.lists(st.integers(0, 99), min_size=2,
                                                                                   max_size=4),
              st.sampled_from(CLASSES)),
    st.tuples(st.just("promote"), st.integers(0, 9)),
    st.tuples(st.just("checkpoint"), st.integers(0, 9), st.integers(0, 9),
              st.lists(st.integers(0, 99), min_size=1, max_size=3)),
    st.tuples(st.just("derive"), st.integers(0, 9), st.integers(0, 9),
              st.lists(st.integers(0, 99), min_size=1, max_size=3), st.booleans()),
)

CASES = st.tuples(
    st.lists(st.sampled_from(ROUTES), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 9), st.sampled_from(ROUTES)), max_size=2),
    st.lists(_STEP, min_size=3, max_size=16),
)
"""(parent routes, subagent children (parent index, route), steps)."""


def run_case(case: tuple[list[str], list[tuple[int, str]], list[tuple]]) -> World:
    """Build one generated conversation, checking (a) at every model run and at the end, then (b)."""
    routes, children, steps = case
    world = World()
    parents = []
    for index, route in enumerate(routes):
        pid = f"p{index}"
        world.participants.append(ParticipantRecord(id=pid, name=f"Agent{index}", provider=route))
        world.routes[pid] = route
        parents.append(pid)
    for index, (parent, route) in enumerate(children):
        pid = f"c{index}"
        owner = parents[parent % len(parents)]
        world.participants.append(ParticipantRecord(id=pid, name=f"Child{index}", role="subagent",
                                                    parent_participant_id=owner, provider=route))
        world.routes[pid] = route
        world.children[pid] = owner
    everyone = [p.id for p in world.participants]
    branches = lambda: sorted(world.branches)  # noqa: E731
    world.user_says("b0")
    for step in steps:
        kind = step[0]
        if kind == "say":
            world.user_says(branches()[step[1] % len(world.branches)])
        elif kind == "fork":
            world.fork(branches()[step[1] % len(world.branches)])
        elif kind == "tool":
            _, who, where, tool, fails, unknown_class = step
            world.tool_step(everyone[who % len(everyone)], branches()[where % len(world.branches)], tool, fails,
                            unknown_class)
        elif kind == "combine":
            _, who, where, picks, declared = step
            world.combine(everyone[who % len(everyone)], branches()[where % len(world.branches)], picks, declared)
        elif kind == "promote" and world.children:
            child = sorted(world.children)[step[1] % len(world.children)]
            world.promote(child, branches()[0])
        elif kind == "checkpoint":
            _, who, where, picks = step
            world.checkpoint(everyone[who % len(everyone)], branches()[where % len(world.branches)], picks)
        elif kind == "derive":
            _, who, where, picks, as_skill = step
            world.skill_or_fact(everyone[who % len(everyone)], branches()[where % len(world.branches)], picks,
                                as_skill)
    for participant in everyone:
        for branch in branches():
            world.view(participant, branch)
    world.check_records()
    return world


def run_taint(quick: bool = False, cases: int | None = None) -> tuple[int, int]:
    """Run generated taint cases; returns ``(cases, violations)`` for ``dossier harden``.

    Args:
        quick: 100 cases instead of 1,000.
        cases: an explicit number of cases (hypothesis derandomized: the same cases every run).

    Returns:
        How many cases ran and how many of them broke property (a) or (b).
    """
    wanted = cases if cases is not None else (100 if quick else 1000)
    counted = {"cases": 0, "violations": 0}

    @settings(max_examples=wanted, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(CASES)
    def one(case: tuple) -> None:
        world = run_case(case)
        counted["cases"] += 1
        counted["violations"] += 1 if world.violations else 0

    one()
    return counted["cases"], counted["violations"]


__all__ = ["CASES", "World", "run_case", "run_taint"]
