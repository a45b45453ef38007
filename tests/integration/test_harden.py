"""The hardening suite against real services: each part passes, and fails when a guarantee is broken on purpose.

The module starts the suite's own embedded stack in a temporary home (as
``dossier harden`` does), so nothing here touches the session's services; the
last test runs the whole ``dossier harden --quick`` command, which CI used to
run a second time on its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from sqlalchemy import text

import policy.lines
from harness.harden import bad_input, injection, isolation, structure
from harness.harden.corpus import BENIGN, payloads
from harness.harden.mcp import MCP_FIELDS, hostile_mcp
from harness.harden.report import Figures
from policy.enums import MessageRole
from policy.records import ChatMessage
from harness.harden.stack import Stack, private_stack
from store import tools as tool_store

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("harden")]  # the full tier only, on one worker


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def stack() -> AsyncIterator[Stack]:
    """One private stack (as `dossier harden` starts it) for the module: each part runs on it in turn."""
    async with private_stack(("postgres", "s3", "temporal", "worker")) as running:
        yield running


async def test_isolation_denies_and_a_gate_that_forgets_the_account_is_counted(
        stack: Stack, monkeypatch: pytest.MonkeyPatch):
    figures = Figures(quick=True)
    await isolation.run_isolation(stack, figures, quick=True, cli=False)
    attempts, denied = figures.values["isolation_attempts"], figures.values["isolation_denied"]
    assert attempts and attempts > 50

    # Deliberate break: an artifact getter that looks the id up in every account.
    original = tool_store.get_artifact

    async def leaky(session: Any, account_id: str, artifact_id: str) -> Any:
        owner = await session.scalar(text("SELECT account_id FROM tool_artifacts WHERE id=:i"), {"i": artifact_id})
        return await original(session, owner or account_id, artifact_id)

    monkeypatch.setattr(tool_store, "get_artifact", leaky)
    broken = Figures(quick=True)
    await isolation.run_isolation(stack, broken, quick=True, cli=False)
    assert broken.values["isolation_attempts"] - broken.values["isolation_denied"] > \
        attempts - denied
    assert any("store.get_artifact" in f["what"] for f in broken.findings)


async def test_injection_control_is_stable_and_an_escape_that_is_removed_is_an_elevation(
        stack: Stack, monkeypatch: pytest.MonkeyPatch):
    control = await injection.run_case(stack, BENIGN)
    assert injection.judge(await injection.run_case(stack, BENIGN), control) == []
    forged_section = next(p for p in payloads() if p.name == "02-plain")
    clean = await injection.run_case(stack, forged_section)
    assert injection.judge(clean, control) == [], injection.sample_lines(clean)

    # Deliberate break: tool-derived text is no longer made single-line and citation-inert.
    monkeypatch.setattr(policy.lines, "inert", lambda value: value)
    broken = await injection.run_case(stack, forged_section)
    why = injection.judge(broken, control)
    assert why and any("forged" in reason for reason in why), why


def _mcp_forged(case: injection.Case) -> dict[str, list[str]]:
    """Forged ids on the context lines of each hostile MCP tool (outside tool messages and fences)."""
    found: dict[str, list[str]] = {}
    for name, chat in case.contexts.items():
        for message in chat:
            if message.role is MessageRole.TOOL:
                continue
            for line in structure.unfenced_lines(message.content or ""):
                for tool in MCP_FIELDS.values():
                    if f"mcp.hostile.{tool}(" in line:
                        line_chat = [ChatMessage(role=MessageRole.SYSTEM, content=line)]
                        found.setdefault(tool, []).extend(structure.forged_ids(line_chat, case.real_ids[name]))
    return found


async def test_mcp_results_are_a_tool_source_and_an_escape_removed_from_them_is_an_elevation(
        stack: Stack, monkeypatch: pytest.MonkeyPatch):
    forged_section = next(p for p in payloads() if p.name == "02-plain")
    forged_citations = next(p for p in payloads() if p.name == "10-plain")
    without = await injection.run_case(stack, BENIGN)
    async with hostile_mcp(stack):
        control = await injection.run_case(stack, BENIGN)
        assert control.placed == without.placed + len(MCP_FIELDS)
        for payload in (forged_section, forged_citations):
            clean = await injection.run_case(stack, payload)
            assert injection.judge(clean, control) == [], injection.sample_lines(clean)
            # The server's text, structured content and error reached the contexts, every citation inert.
            assert sorted(_mcp_forged(clean)) == sorted(MCP_FIELDS.values())
            assert not any(_mcp_forged(clean).values())

        # Deliberate break: tool-derived text is no longer made single-line and citation-inert.
        monkeypatch.setattr(policy.lines, "inert", lambda value: value)
        broken = await injection.run_case(stack, forged_citations)
    assert injection.judge(broken, control)
    # Each MCP placement now carries forged citations of its own: the MCP results are judged, not just carried.
    forged = _mcp_forged(broken)
    assert all(forged[tool] for tool in MCP_FIELDS.values()), forged


async def test_bad_input_counts_an_input_that_is_accepted_and_written(stack: Stack, monkeypatch: pytest.MonkeyPatch):
    good = bad_input.BadInput("a valid message counted as bad on purpose", ("chat", "--no-wait", "hello"))
    monkeypatch.setattr(bad_input, "cases", lambda conversation, message: [
        bad_input.BadInput("unknown conversation", ("chat", "--conversation", "00000000-0000-4000-8000-"
                                                                           "000000000000", "hi")), good])
    figures = Figures(quick=False)
    await bad_input.run_bad_input(stack, figures)
    assert figures.values["bad_inputs"] == 2
    assert figures.values["bad_inputs_unclean"] == 1
    assert any("valid message" in f["what"] and "wrote" in f["what"] for f in figures.findings)
    assert figures.details["chat_stdin"] == "reads the message from stdin"


async def test_retention_finds_no_survivor_and_an_error_text_left_behind_is_one(
        stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.harden import retention
    import store.retention

    figures = Figures(quick=True)
    await retention.run_retention(stack, figures)
    assert figures.values["retention_sites"] > 1_000 and figures.values["retention_survivors"] == 0, figures.findings

    real = store.retention.forgotten_call

    def keeps_the_error(arguments, last_error, history):  # noqa: ANN001, ANN202 - forgotten_call's own
        forgotten_arguments, _, forgotten_history = real(arguments, last_error, history)
        return forgotten_arguments, last_error, forgotten_history  # the final error text stays on the call's row

    monkeypatch.setattr(store.retention, "forgotten_call", keeps_the_error)
    broken = Figures(quick=True)
    await retention.run_retention(stack, broken)
    where = {f["where"] for f in broken.findings if f["field"] == "final_error"}
    assert broken.values["retention_survivors"] > 0 and "tool_calls.last_error" in where, broken.findings


async def _file_keys(harness: Any) -> set[str]:
    from harness.harden.faults import _sql

    rows = await _sql(harness.stack, "SELECT s.key FROM stored_objects s JOIN tool_calls c ON c.id = s.tool_call_id "
                                     "WHERE s.account_id=:a AND c.name='files.write'", a=harness.account)
    return {row[0] for row in rows}


async def test_fault_accounting_counts_a_lost_object(stack: Stack):
    from harness.harden.faults import Harness

    harness = Harness(stack, Figures(quick=True), lambda line: None)
    await harness.open()
    await harness.start("analyst")  # writes a report file to S3
    await harness.settle(timeout=300)
    assert all(run.ok for run in harness.runs), [run.error for run in harness.runs]
    counted = await harness.count()
    assert counted["lost_calls"] == [] and counted["missing_objects"] == [] and counted["orphaned_objects"] == []
    assert counted["s3_files_written"] >= 1 and counted["unrecorded_files"] == []
    assert counted["stored_object_rows"] >= counted["s3_files_written"]
    swept = await harness.sweep()
    assert swept == {"objects_swept": 0, "unclaimed_after_sweep": [], "pending_rows_after_sweep": []}

    # Deliberate break: bytes put under the account's prefix without the graph's record are orphaned,
    # and the sweep cannot remove what the graph does not know.
    e = stack.endpoints
    from dossier.services.s3 import client as s3_client

    s3 = s3_client(e.s3_endpoint, e.s3_access_key, e.s3_secret_key, region=e.s3_region, secure=e.s3_secure)
    stray = (await stack.deps.artifacts.put(harness.account, b"written behind the graph's back")).key
    assert (await harness.count())["orphaned_objects"] == [stray]
    assert (await harness.sweep())["unclaimed_after_sweep"] == [stray]
    s3.remove_object(e.s3_bucket, stray)

    # Deliberate break: a written file loses its record.
    file_key = sorted(await _file_keys(harness))[0]
    async with stack.deps.sessions() as session, session.begin():
        await session.execute(text("DELETE FROM stored_objects WHERE account_id=:a AND key=:k"),
                              {"a": harness.account, "k": file_key})
    assert (await harness.count())["unrecorded_files"] == [file_key]

    # Deliberate break: an object the graph references disappears from S3.
    victim = next(iter(harness._objects()))
    s3.remove_object(e.s3_bucket, victim)
    assert (await harness.count())["missing_objects"] == [victim]


async def test_a_hostile_provider_response_stays_the_models_own_words_and_a_break_is_an_elevation(
        stack: Stack, monkeypatch: pytest.MonkeyPatch):
    from harness.harden import provider

    sample = [p for p in payloads() if p.name in ("02-plain", "05-plain", "10-plain")]
    figures = Figures(quick=True)
    assert await provider.run_provider_responses(stack, figures, sample) == (3, 0), figures.findings

    # Deliberate break: the model's text leaks into the system block of its next context.
    original = provider.HostileModel.generate

    async def leaking(self: Any, request: Any) -> Any:
        if self.requests:
            first = request.messages[0]
            request = request.model_copy(update={"messages": (
                first.model_copy(update={"content": f"{first.content}\n{self.payload.text}"}),
                *request.messages[1:])})
        return await original(self, request)

    monkeypatch.setattr(provider.HostileModel, "generate", leaking)
    broken = Figures(quick=True)
    _, elevations = await provider.run_provider_responses(stack, broken, sample)
    assert elevations >= 1
    assert any("prompt changed" in " ".join(f.get("why", [])) for f in broken.findings), broken.findings


async def test_isolation_probes_memory_and_recall_paths_and_a_forget_that_forgets_the_account_is_counted(
        stack: Stack, monkeypatch: pytest.MonkeyPatch):
    from sqlalchemy import delete

    from store import user_memories
    from store.models import UserMemory

    figures = Figures(quick=True)
    prober = await isolation.run_isolation(stack, figures, quick=True, cli=False)
    probed = {entry["path"] for entry in prober.log}
    assert {"client.forget_memory", "client.memories", "store.forget_user_memory", "store.evidence_requests",
            "tool.recall"} <= probed
    assert figures.values["isolation_attempts"] == figures.values["isolation_denied"], figures.findings

    # Deliberate break: forgetting a memory by id in any account.
    async def leaky(session: Any, account_id: str, user_memory_id: str) -> bool:
        deleted = await session.execute(delete(UserMemory).where(UserMemory.id == user_memory_id)
                                        .returning(UserMemory.id))
        return deleted.first() is not None

    monkeypatch.setattr(user_memories, "forget_user_memory", leaky)
    broken = Figures(quick=True)
    await isolation.run_isolation(stack, broken, quick=True, cli=False)
    assert any("forget_memory" in f["what"] for f in broken.findings), broken.findings


async def test_isolation_covers_the_audit_reads_and_a_run_lookup_that_forgets_the_account_is_counted(
        stack: Stack, monkeypatch: pytest.MonkeyPatch):
    from dossier import audit

    figures = Figures(quick=True)
    prober = await isolation.run_isolation(stack, figures, quick=True, cli=False)
    probed = {entry["path"] for entry in prober.log}
    assert {"client.explain", "client.explain(trace)", "client.why_not(foreign run)",
            "client.why_not(own run, foreign memory)", "client.why_not(own run, foreign artifact)",
            "client.why_not(own run, foreign tool_call)", "client.why_not(own run, foreign message)",
            "client.diff(consecutive)", "client.diff(policy)", "client.diff(own run, foreign run)",
            "client.what_if(conversation)", "client.what_if(account)", "client.what_if(last)"} <= probed
    assert figures.values["isolation_attempts"] == figures.values["isolation_denied"], figures.findings

    # Deliberate break: the audit finds a run in whichever account holds it.
    original = audit._run_assembly

    async def leaky(deps: Any, account_id: str, model_run_id: str) -> Any:
        async with deps.sessions() as session:
            owner = await session.scalar(text("SELECT account_id FROM model_runs WHERE id=:i"), {"i": model_run_id})
        return await original(deps, owner or account_id, model_run_id)

    monkeypatch.setattr(audit, "_run_assembly", leaky)
    broken = Figures(quick=True)
    await isolation.run_isolation(stack, broken, quick=True, cli=False)
    leaked = {f["what"] for f in broken.findings}
    assert any("client.explain" in what for what in leaked), leaked
    assert any("client.diff" in what for what in leaked), leaked


async def test_the_quick_hardening_command_measures_every_part_and_finds_no_bad_figure(tmp_path) -> None:
    """`dossier harden --quick` as CI ran it: exit 0 means every figure was measured and none is bad."""
    import asyncio
    import json
    import os
    import sys

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dossier.cli", "harden", "--quick", "--json", cwd=tmp_path,
        env={**os.environ, "DOSSIER_HOME": str(tmp_path / ".dossier")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode(errors="replace")[-4000:]
    figures = json.loads(out)
    assert figures, out
