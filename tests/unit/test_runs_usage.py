"""`dossier runs --json`: the model spec and the provider-reported usage, also for runs recorded before them."""

from __future__ import annotations

from dossier.client import USAGE_KEYS, RunRow, run_usage


def test_usage_has_every_key_and_unreported_counts_are_null() -> None:
    assert run_usage({}) == run_usage(None) == dict.fromkeys(USAGE_KEYS)
    reported = {"input_tokens": 812, "output_tokens": 23, "cache_read_tokens": 512, "cache_write_tokens": None}
    assert run_usage(reported) == reported


def test_a_run_recorded_with_only_prompt_tokens_shows_them_as_input() -> None:
    assert run_usage({"prompt_tokens": 640}) == {**dict.fromkeys(USAGE_KEYS), "input_tokens": 640}


def test_the_json_row_keeps_the_old_fields_and_adds_model_and_usage() -> None:
    row = RunRow(model_run_id="r", workflow_id="w", runtime_kind="chat", conversation_id="c", branch_id="b",
                 participant="Analyst", context_assembly_id="a", status="succeeded", legacy_tokens=10,
                 assembled_tokens=5, model="scripted:analyst")
    data = row.to_json()
    assert {"model_run_id", "workflow_id", "runtime_kind", "participant", "context_assembly_id", "legacy_tokens",
            "assembled_tokens", "ui_url"} <= set(data)
    assert data["model"] == "scripted:analyst" and data["usage"] == dict.fromkeys(USAGE_KEYS)
