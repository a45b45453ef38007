"""ContextPolicy fingerprints: stable across processes and hash seeds, sensitive to every field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from policy.enums import FreshnessClass, PrivacyClass, RuntimeKind
from policy.policy import DEFAULT_POLICY, DEFAULT_ROUTES, ContextPolicy, ProviderRoute

REPO = Path(__file__).resolve().parents[3]

CUSTOM_ROUTE = ProviderRoute(
    name="custom",
    allowed=frozenset({PrivacyClass.PUBLIC, PrivacyClass.USER, PrivacyClass.OAUTH, PrivacyClass.GOOGLE_DERIVED}),
    raw_allowed=frozenset({PrivacyClass.OAUTH, PrivacyClass.PUBLIC, PrivacyClass.USER}),
)

_PROBE = """
import json
from policy.enums import PrivacyClass
from policy.policy import DEFAULT_POLICY, ContextPolicy, ProviderRoute
route = ProviderRoute(
    name="custom",
    allowed=frozenset({PrivacyClass.PUBLIC, PrivacyClass.USER, PrivacyClass.OAUTH, PrivacyClass.GOOGLE_DERIVED}),
    raw_allowed=frozenset({PrivacyClass.OAUTH, PrivacyClass.PUBLIC, PrivacyClass.USER}),
)
custom = ContextPolicy(version="custom/1", routes=(route,))
print(json.dumps([DEFAULT_POLICY.fingerprint, custom.fingerprint, DEFAULT_POLICY.version_tag]))
"""


def _fingerprints_in_subprocess(seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=60)
    return json.loads(done.stdout)


def test_fingerprint_is_stable_across_hash_seeds():
    custom = ContextPolicy(version="custom/1", routes=(CUSTOM_ROUTE,))
    expected = [DEFAULT_POLICY.fingerprint, custom.fingerprint, DEFAULT_POLICY.version_tag]
    for seed in ("0", "1", "4242", "random"):
        assert _fingerprints_in_subprocess(seed) == expected, seed


def test_fingerprint_is_a_sha256_and_the_version_tag_cites_it():
    fingerprint = DEFAULT_POLICY.fingerprint
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    assert DEFAULT_POLICY.version_tag == f"dossier-default/9#{fingerprint[:12]}"


def test_equal_policies_have_equal_fingerprints():
    reordered = ProviderRoute(
        name="custom",
        allowed=frozenset(reversed(sorted(CUSTOM_ROUTE.allowed))),
        raw_allowed=frozenset(sorted(CUSTOM_ROUTE.raw_allowed)),
    )
    assert ContextPolicy(routes=(CUSTOM_ROUTE,)).fingerprint == ContextPolicy(routes=(reordered,)).fingerprint
    assert ContextPolicy().fingerprint == DEFAULT_POLICY.fingerprint
    ttl_reordered = dict(reversed(list(DEFAULT_POLICY.freshness_ttl.items())))
    assert ContextPolicy(freshness_ttl=ttl_reordered).fingerprint == DEFAULT_POLICY.fingerprint


CHANGES = [
    ("version", {"version": "dossier-default/6"}),
    ("routes dropped", {"routes": DEFAULT_ROUTES[:-1]}),
    ("routes reordered", {"routes": tuple(reversed(DEFAULT_ROUTES))}),
    ("routes raw_allowed", {"routes": (DEFAULT_ROUTES[0].model_copy(
        update={"raw_allowed": frozenset({PrivacyClass.PUBLIC})}),) + DEFAULT_ROUTES[1:]}),
    ("default_token_budget", {"default_token_budget": 2048}),
    ("message_window", {"message_window": 5}),
    ("message_window_by_runtime", {"message_window_by_runtime": {RuntimeKind.DISCUSSION: 5}}),
    ("keep_opening_request", {"keep_opening_request": False}),
    ("keep_fork_point", {"keep_fork_point": False}),
    ("keep_older_user_messages", {"keep_older_user_messages": True}),
    ("max_message_chars", {"max_message_chars": 3999}),
    ("transcript_summary_chars", {"transcript_summary_chars": 0}),
    ("transcript_summary_after", {"transcript_summary_after": 2}),
    ("stale_handling", {"stale_handling": "omit"}),
    ("freshness_ttl value", {"freshness_ttl": {**DEFAULT_POLICY.freshness_ttl,
                                               FreshnessClass.VOLATILE: timedelta(minutes=16)}}),
    ("freshness_ttl to None", {"freshness_ttl": {**DEFAULT_POLICY.freshness_ttl, FreshnessClass.DURABLE: None}}),
    ("max_memories", {"max_memories": 47}),
    ("max_error_chars", {"max_error_chars": 601}),
    ("max_failed_tools", {"max_failed_tools": 3}),
    ("rehydration_item_bytes", {"rehydration_item_bytes": 4097}),
    ("rehydration_total_bytes", {"rehydration_total_bytes": 12289}),
    ("native_result_bytes", {"native_result_bytes": 0}),
    ("native_compact", {"native_compact": False}),
    ("epochs", {"epochs": False}),
    ("epoch_growth_tokens", {"epoch_growth_tokens": 512}),
    ("own_step_text_chars", {"own_step_text_chars": None}),
    ("epoch_supersession", {"epoch_supersession": "restart"}),
    ("memory_detail_budget", {"memory_detail_budget": None}),
    ("epoch_break_even", {"epoch_break_even": True}),
    ("break_even_min_tokens", {"break_even_min_tokens": 1}),
    ("cache_read_price", {"cache_read_price": 0.5}),
    ("cache_write_price", {"cache_write_price": 1.0}),
    ("cache_ttl_seconds value", {"cache_ttl_seconds": {"anthropic": 3600, "openai": 300}}),
    ("cache_ttl_seconds route", {"cache_ttl_seconds": {"anthropic": 300}}),
    ("cache_long_ttl_seconds", {"cache_long_ttl_seconds": {}}),
    ("cache_long_write_price", {"cache_long_write_price": 1.5}),
    ("epoch_staleness", {"epoch_staleness": "note"}),
    ("native_view_bytes", {"native_view_bytes": 0}),
    ("native_view_source_bytes", {"native_view_source_bytes": 1024}),
]


@pytest.mark.parametrize("update", [c[1] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_fingerprint_changes_when_any_field_changes(update):
    changed = ContextPolicy(**{**DEFAULT_POLICY.model_dump(), **update})
    assert changed.fingerprint != DEFAULT_POLICY.fingerprint


def test_every_field_is_covered_by_the_change_table():
    covered = {name.split(" ")[0] for name, _ in CHANGES}
    assert covered == set(ContextPolicy.model_fields)


def test_policy_is_frozen():
    with pytest.raises(ValueError):
        DEFAULT_POLICY.message_window = 9  # type: ignore[misc]


def test_the_whole_result_cap_grows_with_a_larger_budget_and_never_shrinks():
    assert DEFAULT_POLICY.whole_result_bytes(None) == DEFAULT_POLICY.native_result_bytes == 12_288
    assert DEFAULT_POLICY.whole_result_bytes(4096) == 12_288
    assert DEFAULT_POLICY.whole_result_bytes(32_768) == 49_152
