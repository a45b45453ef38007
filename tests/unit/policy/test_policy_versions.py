"""The registry of policy versions: a tag resolves to exactly its policy, anything else is a typed error."""

from __future__ import annotations

from pathlib import Path

import pytest
from policy_builders import candidates, message, transcript

import policy.versions as versions
from policy.errors import PolicyError, UnknownPolicyVersionError
from policy.policy import DEFAULT_POLICY, ContextPolicy
from policy.versions import LEAN_POLICY, REGISTERED_POLICIES, policy_by_name, policy_for_tag, registered_names


def test_assemblies_record_the_tag_the_registry_is_keyed_by() -> None:
    assert DEFAULT_POLICY.version_tag == f"dossier-default/9#{DEFAULT_POLICY.fingerprint[:12]}"
    assert policy_for_tag(DEFAULT_POLICY.version_tag) is DEFAULT_POLICY
    assert policy_for_tag(LEAN_POLICY.version_tag) is LEAN_POLICY


def test_registered_versions_have_distinct_names_and_tags() -> None:
    assert len({p.version for p in REGISTERED_POLICIES}) == len(REGISTERED_POLICIES)
    assert len({p.version_tag for p in REGISTERED_POLICIES}) == len(REGISTERED_POLICIES)
    assert registered_names()[0] == DEFAULT_POLICY.version


def test_the_lean_variant_differs_in_the_documented_knobs_only() -> None:
    default, lean = DEFAULT_POLICY.model_dump(), LEAN_POLICY.model_dump()
    changed = {key for key in default if default[key] != lean[key]}
    assert changed == {"version", "message_window", "message_window_by_runtime", "max_memories",
                       "stale_handling", "rehydration_item_bytes", "rehydration_total_bytes"}
    source = Path(versions.__file__).read_text(encoding="utf-8")
    documented = source[source.index("LEAN_POLICY = "):source.index("REGISTERED_POLICIES")]
    for knob in changed - {"version"}:
        assert f"``{knob}``" in documented


def test_the_lean_variant_keeps_fewer_transcript_messages(run) -> None:
    world = candidates(messages=[
        message("m1", 1), message("m2", 2, "assistant"), message("m3", 3), message("m4", 4, "assistant"),
        message("m5", 5),
    ])
    default = [content for _, content in transcript(run(world))]
    lean = [content for _, content in transcript(run(world, policy=LEAN_POLICY))]
    assert "user message m5" in lean
    assert "assistant message m4" in default
    assert "assistant message m4" not in lean


@pytest.mark.parametrize(
    ("tag", "detail"),
    [
        ("dossier-default/5#0123456789ab", "no registered policy is named 'dossier-default/5'"),
        ("", "no registered policy is named ''"),
        ("dossier-default/9", "is registered with fingerprint"),
        ("dossier-default/9#000000000000", "is registered with fingerprint"),
        (f"{DEFAULT_POLICY.version_tag}0", "is registered with fingerprint"),
    ],
)
def test_an_unknown_tag_is_a_typed_error_never_a_default(tag: str, detail: str) -> None:
    with pytest.raises(UnknownPolicyVersionError, match=detail) as caught:
        policy_for_tag(tag)
    assert caught.value.tag == tag
    assert isinstance(caught.value, PolicyError)


def test_a_policy_edited_under_an_unchanged_name_is_not_its_registered_version() -> None:
    edited = ContextPolicy(max_memories=DEFAULT_POLICY.max_memories + 1)
    assert edited.version == DEFAULT_POLICY.version
    with pytest.raises(UnknownPolicyVersionError, match="fingerprint"):
        policy_for_tag(edited.version_tag)


def test_by_name_accepts_a_name_or_a_tag() -> None:
    assert policy_by_name("dossier-default/9") is DEFAULT_POLICY
    assert policy_by_name("dossier-lean/1") is LEAN_POLICY
    assert policy_by_name(LEAN_POLICY.version_tag) is LEAN_POLICY
    with pytest.raises(UnknownPolicyVersionError, match="known: dossier-default/9, dossier-lean/1"):
        policy_by_name("dossier-strict/9")
    with pytest.raises(UnknownPolicyVersionError):
        policy_by_name("dossier-lean/1#ffffffffffff")
