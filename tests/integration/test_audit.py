"""Explain, why-not, what-if and diff on the seed scenarios, on real Postgres and S3.

Each scenario is written into a fresh account through the live capture code
and its measured call assembled as a model run (harness/scenarios/runner.py);
the audit reads that run back. The records asked about are the ones each
scenario was written to test: a sibling branch's file, another participant's
private scratchpad, a superseded CRM read, a Gmail body on a hosted route, a
stale calendar listing.
"""

from __future__ import annotations

import asyncio
import io
import json
from contextlib import redirect_stdout
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from activities.providers.factory import ModelProviders
from activities.context import assemble_context
from dossier import audit
from dossier.client import DossierClient, InvalidInputError, UnknownIdError
from dossier.inspector import reads
from dossier.settings import Settings
from harness.scenarios import scenario
from harness.scenarios.runner import ScenarioOutcome, run_scenario
from policy.enums import MessageRole, PrivacyClass
from policy.versions import LEAN_POLICY
from store import messages
from store.errors import NotFoundError
from store.models import ToolCall, ToolMemory
from store.writes import NewMessage


async def _memory(deps, outcome: ScenarioOutcome, tool: str, *, first: bool = True, **where: Any) -> str:
    """The id of the memory a scenario's ``tool`` call produced (the first or last one)."""
    async with deps.sessions() as session:
        stmt = select(ToolMemory.id).where(ToolMemory.account_id == outcome.account_id,
                                           ToolMemory.source_tool == tool)
        for name, value in where.items():
            stmt = stmt.where(getattr(ToolMemory, name) == value)
        ids = list(await session.scalars(stmt.order_by(ToolMemory.seq)))
    assert ids, f"no memory of {tool}"
    return ids[0] if first else ids[-1]


async def _call(deps, outcome: ScenarioOutcome, tool: str, **where: Any) -> str:
    async with deps.sessions() as session:
        stmt = select(ToolCall.id).where(ToolCall.account_id == outcome.account_id, ToolCall.name == tool)
        for name, value in where.items():
            stmt = stmt.where(getattr(ToolCall, name) == value)
        return (await session.scalars(stmt.order_by(ToolCall.seq))).first()


async def test_explain_json_has_the_promised_fields_and_provenance_down_to_the_tool_call(graph_deps) -> None:
    outcome = await run_scenario(scenario("participant_visibility"), graph_deps)
    explained = await audit.explain(graph_deps, outcome.account_id, outcome.model_run_id)
    data = explained.to_json()

    assert {"model_run_id", "policy_version", "messages", "included", "omitted"} <= set(data)
    assert data["model_run_id"] == outcome.model_run_id
    assert data["policy_version"] == outcome.record.policy_version
    assert data["messages"] == [message.to_openai() for message in outcome.messages]
    assert all({"ref", "reason"} <= set(row) for row in data["included"])
    assert all({"ref", "rule", "reason"} <= set(row) for row in data["omitted"])
    assert data["omission_counts"] == outcome.record.omitted_counts

    # Model B's search is its latest step: its result is the first read, the raw result as the tool message.
    search = await _call(graph_deps, outcome, "web.search")
    [row] = [row for row in explained.included if row.ref == f"tool_call:{search}"]
    assert (row.rule, row.outcome) == ("appended", "rehydrated")
    assert row.messages and data["messages"][row.messages[-1]]["role"] == "tool"
    assert "pgvector 0.8.0 Released!" in data["messages"][row.messages[-1]]["content"]
    assert [(r.ref, r.kind) for r in explained.rehydrations] == [(f"tool_call:{search}", "first_read")]
    [raw] = [row for row in explained.included if row.ref.startswith("artifact:")]
    assert raw.rule == "appended" and "first read" in raw.reason
    assert [link.kind for link in raw.provenance] == ["artifact", "tool_call", "branch", "participant"]
    assert raw.provenance[1].label == "web.search" and raw.provenance[-1].label == "Model B"

    scratch = await _memory(graph_deps, outcome, "notes.scratch")
    [omitted] = [row for row in explained.omitted if row.ref == f"memory:{scratch}"]
    assert (omitted.rule, omitted.omission) == ("visibility", "not_visible")


async def test_why_not_on_another_participants_private_scratchpad(graph_deps) -> None:
    outcome = await run_scenario(scenario("participant_visibility"), graph_deps)
    scratch = await _memory(graph_deps, outcome, "notes.scratch")
    answer = await audit.why_not(graph_deps, outcome.account_id, scratch, outcome.model_run_id)
    data = answer.to_json()
    assert {"record_id", "model_run_id", "included", "rule", "reason", "policy_version"} <= set(data)
    assert (data["record_id"], data["model_run_id"]) == (scratch, outcome.model_run_id)
    assert (answer.included, answer.rule, answer.omission) == (False, "visibility", "not_visible")
    assert answer.policy_version == outcome.record.policy_version
    assert "private to participant" in answer.reason

    # Its raw artifact got no decision row (raw bytes are counted, never sent unrequested): the answer comes
    # from the recomputed candidates and the gate that denies it, with what the gate read.
    artifact = next(link.id for link in answer.provenance if link.kind == "artifact")
    raw = await audit.why_not(graph_deps, outcome.account_id, artifact, outcome.model_run_id)
    assert (raw.included, raw.rule, raw.omission) == (False, "visibility", "not_visible")
    assert raw.inputs["visibility"] == "participant_private"
    assert raw.inputs["viewer_participant_id"] != raw.inputs["owner_participant_id"]


async def test_why_not_on_a_sibling_branch_file_and_its_message(graph_deps) -> None:
    outcome = await run_scenario(scenario("branch_isolation"), graph_deps)
    calls = []
    async with graph_deps.sessions() as session:
        calls = list(await session.scalars(select(ToolCall).where(ToolCall.account_id == outcome.account_id,
                                                                  ToolCall.name == "files.write")))
    [plan_a] = [call for call in calls if call.branch_id != outcome.boundary.branch_id]
    [plan_b] = [call for call in calls if call.branch_id == outcome.boundary.branch_id]
    memory_a = await _memory(graph_deps, outcome, "files.write", branch_id=plan_a.branch_id)

    answer = await audit.why_not(graph_deps, outcome.account_id, memory_a, outcome.model_run_id)
    assert (answer.included, answer.rule, answer.omission) == (False, "visibility", "outside_lineage")
    assert plan_a.branch_id in answer.reason
    assert answer.policy_version == outcome.record.policy_version

    memory_b = await _memory(graph_deps, outcome, "files.write", branch_id=plan_b.branch_id)
    included = await audit.why_not(graph_deps, outcome.account_id, memory_b, outcome.model_run_id)
    # An included memory: proof of where, and its provenance down to the artifact and the tool call.
    assert included.included and included.rule == "memory" and included.messages
    kinds = [link.kind for link in included.provenance]
    assert kinds[:3] == ["memory", "artifact", "tool_call"] and {"branch", "participant"} <= set(kinds)
    assert next(link for link in included.provenance if link.kind == "tool_call").id == plan_b.id
    explained = await audit.explain(graph_deps, outcome.account_id, outcome.model_run_id)
    assert f"memory:{memory_b}" in {row.ref for row in explained.included}

    async with graph_deps.sessions() as session:
        run = await messages.get_model_run(session, outcome.account_id, outcome.model_run_id)
        sibling_text = [m for m in (await messages.list_model_runs(session, outcome.account_id))
                        if m.branch_id == plan_a.branch_id and m.message_id]
    said = await audit.why_not(graph_deps, outcome.account_id, sibling_text[0].message_id, run.id)
    assert (said.included, said.rule, said.omission) == (False, "lineage", "outside_lineage")


async def test_why_not_on_a_superseded_crm_read(graph_deps) -> None:
    outcome = await run_scenario(scenario("contradiction_and_supersession"), graph_deps)
    first = await _memory(graph_deps, outcome, "crm.get_account", first=True)
    second = await _memory(graph_deps, outcome, "crm.get_account", first=False)
    answer = await audit.why_not(graph_deps, outcome.account_id, first, outcome.model_run_id)
    assert (answer.included, answer.rule, answer.omission) == (False, "supersession", "superseded")
    assert second in answer.reason
    assert (await audit.why_not(graph_deps, outcome.account_id, second, outcome.model_run_id)).included


async def test_why_not_on_a_hosted_route_secret_and_a_withheld_gmail_body(graph_deps) -> None:
    seed = scenario("google_derived_route")
    # The same seed with the CRM lookup declared secret-adjacent: the openai route may not receive it at all.
    secret = seed.model_copy(update={"tools": tuple(
        spec.model_copy(update={"privacy": PrivacyClass.SECRET_ADJACENT}) if spec.name == "crm.get_contact" else spec
        for spec in seed.tools)})
    outcome = await run_scenario(secret, graph_deps)
    contact = await _memory(graph_deps, outcome, "crm.get_contact")
    answer = await audit.why_not(graph_deps, outcome.account_id, contact, outcome.model_run_id)
    assert (answer.included, answer.rule, answer.omission) == (False, "privacy", "privacy_route")
    assert "secret_adjacent not allowed on route openai" in answer.reason

    body = await audit.explain(graph_deps, outcome.account_id, outcome.model_run_id)
    [withheld] = [row for row in body.omitted if row.ref.startswith("artifact:")]
    assert (withheld.rule, withheld.omission) == ("rehydration", "raw_privacy")
    # The message's memory is shown while its raw body is withheld.
    message = await _memory(graph_deps, outcome, "gmail.get_message")
    assert f"memory:{message}" in {row.ref for row in body.included}


async def test_trace_lists_every_candidate_and_the_rule_that_decided_it(graph_deps) -> None:
    outcome = await run_scenario(scenario("participant_visibility"), graph_deps)
    explained = await audit.explain(graph_deps, outcome.account_id, outcome.model_run_id, trace=True)
    assert explained.trace_note is None
    assert explained.trace is not None and len(explained.trace) > len(outcome.decisions)
    refs = {row.ref for row in explained.trace}
    async with graph_deps.sessions() as session:
        memories = list(await session.scalars(select(ToolMemory.id).where(
            ToolMemory.account_id == outcome.account_id)))
    assert {f"memory:{m}" for m in memories} <= refs
    artifacts = [row for row in explained.trace if row.ref.startswith("artifact:")]
    # The scratchpad's raw bytes are another participant's; the search result's were the first read.
    assert {(row.rule, row.outcome, row.omission) for row in artifacts} == {
        ("visibility", "omitted", "not_visible"), ("appended", "rehydrated", None)}
    assert (await audit.explain(graph_deps, outcome.account_id, outcome.model_run_id)).trace is None


async def test_what_if_under_the_lean_policy_reports_the_known_diff(graph_deps) -> None:
    outcome = await run_scenario(scenario("stale_connected_app_memory"), graph_deps)
    report = await audit.what_if(graph_deps, outcome.account_id, LEAN_POLICY.version,
                                 conversation_id=outcome.conversation_id)
    assert report.policy_version == LEAN_POLICY.version_tag
    assert report.baseline_versions == [outcome.record.policy_version]
    [run] = report.runs
    calendar = await _memory(graph_deps, outcome, "calendar.list_events")
    # dossier-lean/1 drops stale memories instead of marking them: the calendar listing goes.
    [stale] = [change for change in run.dropped if change.ref == f"memory:{calendar}"]
    assert (stale.before_outcome, stale.after_outcome, stale.after_omission) == ("marked_stale", "omitted", "stale")
    # Its one-message window drops the older transcript messages the default's window of 3 kept.
    windowed = [change for change in run.dropped if change.ref.startswith("message:")]
    assert windowed and all(change.after_omission == "outside_window" for change in windowed)
    assert run.added == []
    assert run.token_change < 0 and run.billed_change < 0
    assert run.newly_fired == []
    totals = report.totals
    assert (totals.assemblies, totals.changed_assemblies) == (1, 1)
    assert (totals.dropped, totals.token_change) == (len(run.dropped), run.token_change)
    assert any(change.side == "removed" for change in run.messages)

    # The policy the run was made under reports no change at all: the diff is not noise.
    same = await audit.what_if(graph_deps, outcome.account_id, "dossier-default/9",
                               conversation_id=outcome.conversation_id)
    [unchanged] = same.runs
    assert (unchanged.added, unchanged.dropped, unchanged.changed, unchanged.messages) == ([], [], [], [])
    assert unchanged.token_change == 0


async def test_the_audit_and_the_inspector_read_one_provenance_walk(graph_deps) -> None:
    outcome = await run_scenario(scenario("stale_connected_app_memory"), graph_deps)
    calendar = await _memory(graph_deps, outcome, "calendar.list_events")
    links = await audit.provenance(graph_deps, outcome.account_id, f"memory:{calendar}")
    page = await reads.provenance(graph_deps, outcome.account_id, "memory", calendar)
    assert page.memory is not None and page.branch is not None
    shown = {("memory", page.memory.id), ("branch", page.branch.id), *(("artifact", a.id) for a in page.artifacts),
             *(("tool_call", c.id) for c in page.tool_calls), *(("model_run", r.id) for r in page.runs),
             *(("participant", p.id) for p in page.participants)}
    assert [link.kind for link in links][:3] == ["memory", "artifact", "tool_call"]
    assert {(link.kind, link.id) for link in links} == shown

    # Another account's memory: no chain for the audit, not found for the inspector (as for an unknown id).
    other = await run_scenario(scenario("stale_connected_app_memory"), graph_deps)
    assert await audit.provenance(graph_deps, other.account_id, f"memory:{calendar}") == []
    with pytest.raises(NotFoundError):
        await reads.provenance(graph_deps, other.account_id, "memory", calendar)


async def test_what_if_by_account_and_last_runs(graph_deps) -> None:
    outcome = await run_scenario(scenario("stale_connected_app_memory"), graph_deps)
    by_account = await audit.what_if(graph_deps, outcome.account_id, LEAN_POLICY.version, account=outcome.account_id)
    last = await audit.what_if(graph_deps, outcome.account_id, LEAN_POLICY.version, last=1)
    assert [r.before.model_run_id for r in by_account.runs] == [r.before.model_run_id for r in last.runs] == [
        outcome.model_run_id]
    assert by_account.totals == last.totals


async def test_what_if_last_passes_over_newer_runs_without_an_assembly(graph_deps) -> None:
    outcome = await run_scenario(scenario("stale_connected_app_memory"), graph_deps)
    where = (outcome.account_id, outcome.conversation_id, outcome.boundary.branch_id, outcome.boundary.participant_id)

    async def runs_without_an_assembly() -> None:  # runs that never got as far as assembling a context
        async with graph_deps.sessions() as session, session.begin():
            for _ in range(8):
                await messages.start_model_run(session, *where)

    await runs_without_an_assembly()
    async with graph_deps.sessions() as session, session.begin():
        second = await messages.start_model_run(session, *where)
    await assemble_context(graph_deps, outcome.boundary.model_copy(
        update={"model_run_id": second.id, "now": outcome.boundary.now + timedelta(minutes=1)}))
    await runs_without_an_assembly()

    newest = await audit.what_if(graph_deps, outcome.account_id, LEAN_POLICY.version, last=1)
    assert [r.before.model_run_id for r in newest.runs] == [second.id]
    for last in (2, 5):
        report = await audit.what_if(graph_deps, outcome.account_id, LEAN_POLICY.version, last=last)
        assert [r.before.model_run_id for r in report.runs] == [outcome.model_run_id, second.id]


async def test_diff_of_consecutive_calls(graph_deps) -> None:
    outcome = await run_scenario(scenario("stale_connected_app_memory"), graph_deps)
    async with graph_deps.sessions() as session, session.begin():
        await messages.append_message(session, outcome.account_id, outcome.conversation_id, NewMessage(
            branch_id=outcome.boundary.branch_id, role=MessageRole.USER, content="And on Saturday morning?"))
        run = await messages.start_model_run(session, outcome.account_id, outcome.conversation_id,
                                             outcome.boundary.branch_id, outcome.boundary.participant_id)
    boundary = outcome.boundary.model_copy(update={"model_run_id": run.id,
                                                   "now": outcome.boundary.now + timedelta(minutes=1)})
    await assemble_context(graph_deps, boundary)

    result = await audit.diff(graph_deps, outcome.account_id, run.id)
    assert (result.before.model_run_id, result.after.model_run_id) == (outcome.model_run_id, run.id)
    assert [(change.side, change.text) for change in result.messages] == [("added", "And on Saturday morning?")]
    # The epoch continued: every message of the previous call is sent again, byte for byte.
    assert result.shared_prefix_messages == len(outcome.messages)
    assert result.token_change > 0
    assert [change.ref for change in result.added if change.ref.startswith("message:")]
    both = await audit.diff(graph_deps, outcome.account_id, outcome.model_run_id, run.id)
    assert both.to_json() == result.to_json()
    with pytest.raises(audit.NotFoundError):  # the first call has nothing before it
        await audit.diff(graph_deps, outcome.account_id, outcome.model_run_id)

    under_lean = await audit.diff(graph_deps, outcome.account_id, run.id, policy_version=LEAN_POLICY.version)
    assert under_lean.after.assembly_id is None and under_lean.after.policy_version == LEAN_POLICY.version_tag

    # Both calls under the lean policy: the stale calendar memory and the older messages go from each.
    report = await audit.what_if(graph_deps, outcome.account_id, LEAN_POLICY.version,
                                 conversation_id=outcome.conversation_id)
    assert [r.before.model_run_id for r in report.runs] == [outcome.model_run_id, run.id]
    assert (report.totals.assemblies, report.totals.changed_assemblies, report.totals.added) == (2, 2, 0)
    for one in report.runs:
        assert any(change.ref.startswith("memory:") and change.after_omission == "stale" for change in one.dropped)
        assert one.token_change < 0 and one.newly_fired == []
    assert report.totals.newly_fired == {} and report.totals.billed_change < 0


async def test_unknown_and_foreign_ids_read_the_same(graph_deps) -> None:
    mine = await run_scenario(scenario("stale_connected_app_memory"), graph_deps)
    theirs = await run_scenario(scenario("participant_visibility"), graph_deps)
    client = DossierClient(deps=graph_deps, temporal=None, settings=Settings(), account_id=mine.account_id,
                           providers=lambda spec: None, agents=None)
    unknown = "00000000-0000-4000-8000-000000000000"
    scratch = await _memory(graph_deps, theirs, "notes.scratch")

    async def message_of(call) -> str:
        try:
            await call
        except UnknownIdError as error:
            text = str(error)
            for one in (theirs.model_run_id, theirs.conversation_id, scratch, unknown):
                text = text.replace(one, "<ID>")
            return text
        raise AssertionError("not refused")

    assert await message_of(client.runs.explain(theirs.model_run_id)) == await message_of(client.runs.explain(unknown))
    assert await message_of(client.runs.why_not(scratch, mine.model_run_id)) == \
        await message_of(client.runs.why_not(unknown, mine.model_run_id))
    assert await message_of(client.runs.diff(theirs.model_run_id)) == await message_of(client.runs.diff(unknown))
    assert await message_of(client.runs.what_if("dossier-lean/1", conversation_id=theirs.conversation_id)) == \
        await message_of(client.runs.what_if("dossier-lean/1", conversation_id=unknown))
    with pytest.raises(InvalidInputError, match="unknown policy version"):
        await client.runs.what_if("dossier-nope/9", last=1)
    with pytest.raises(InvalidInputError, match="not a valid id"):
        await client.runs.explain("m:0be7f87a")


async def test_cli_json_shapes(graph_deps, monkeypatch: pytest.MonkeyPatch, database_url: str) -> None:
    from dossier.cli import main
    from dossier.commands import audit as commands
    from store.db import create_engine, create_sessionmaker

    outcome = await run_scenario(scenario("participant_visibility"), graph_deps)
    scratch = await _memory(graph_deps, outcome, "notes.scratch")

    async def with_client(work):  # the CLI's own loop needs its own engine
        engine = create_engine(database_url)
        try:
            from dataclasses import replace

            deps = replace(graph_deps, sessions=create_sessionmaker(engine))
            client = DossierClient(deps=deps, temporal=None, settings=Settings(),  # type: ignore[arg-type]
                                   account_id=outcome.account_id, providers=lambda spec: None, agents=None)
            return await work(client)
        finally:
            await engine.dispose()

    monkeypatch.setattr(commands, "_with_client", with_client)

    def cli(*argv: str) -> tuple[int, str]:
        out = io.StringIO()
        with redirect_stdout(out):
            code = main(list(argv))
        return code, out.getvalue()

    code, text = await asyncio.to_thread(cli, "explain", outcome.model_run_id, "--json")
    data = json.loads(text)
    assert code == 0 and {"model_run_id", "policy_version", "messages", "included", "omitted"} <= set(data)
    code, text = await asyncio.to_thread(cli, "why-not", scratch, outcome.model_run_id, "--json")
    data = json.loads(text)
    assert code == 0 and (data["included"], data["rule"], data["record_id"]) == (False, "visibility", scratch)
    code, text = await asyncio.to_thread(cli, "what-if", "--policy", "dossier-lean/1", "--conversation",
                                         outcome.conversation_id, "--json")
    assert code == 0 and json.loads(text)["totals"]["assemblies"] == 1
    code, text = await asyncio.to_thread(cli, "explain", outcome.model_run_id, "--trace")
    assert code == 0 and "== included" in text and "== trace" in text and "\x1b" not in text
    code, text = await asyncio.to_thread(cli, "why-not", scratch, outcome.model_run_id)
    assert code == 0 and "was NOT included" in text and "not_visible" in text
    code, _ = await asyncio.to_thread(cli, "explain", "00000000-0000-4000-8000-000000000000", "--json")
    assert code == 2


async def test_an_assembly_stored_before_replay_inputs_is_explained_from_its_rows(graph_deps) -> None:
    from sqlalchemy import update

    from store.models import ContextAssembly

    outcome = await run_scenario(scenario("participant_visibility"), graph_deps)
    async with graph_deps.sessions() as session, session.begin():
        await session.execute(update(ContextAssembly).where(
            ContextAssembly.account_id == outcome.account_id, ContextAssembly.id == outcome.assembly_id,
        ).values(boundary=None, candidate_limits=None, user_memory_seq=None, user_memory_ids=None))
    explained = await audit.explain(graph_deps, outcome.account_id, outcome.model_run_id, trace=True)
    assert explained.trace_note and "could not be recomputed" in explained.trace_note
    assert [row.ref for row in explained.trace] == [d.subject_ref for d in outcome.decisions]
    scratch = await _memory(graph_deps, outcome, "notes.scratch")
    # Decided by a stored row: answered as before. The raw artifact had no row: said to be unknown, not guessed.
    assert (await audit.why_not(graph_deps, outcome.account_id, scratch, outcome.model_run_id)).omission == \
        "not_visible"
    chain = await audit.provenance(graph_deps, outcome.account_id, f"memory:{scratch}")
    artifact = next(link.id for link in chain if link.kind == "artifact")
    raw = await audit.why_not(graph_deps, outcome.account_id, artifact, outcome.model_run_id)
    assert (raw.included, raw.rule) == (False, "unknown") and "could not be recomputed" in raw.reason
    report = await audit.what_if(graph_deps, outcome.account_id, LEAN_POLICY.version,
                                 conversation_id=outcome.conversation_id)
    assert report.runs == [] and [s.assembly_id for s in report.skipped] == [outcome.assembly_id]


async def test_a_real_tool_loop_turn_is_explained_with_model_runs_in_the_chain(temporal_env, graph_deps) -> None:
    """A multi-step scripted turn on Temporal: each call's tool results carry the run that made them."""
    import uuid

    from dossier.runtime import build_worker
    from store import conversations

    task_queue = f"dossier-audit-{uuid.uuid4().hex[:8]}"
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="audit turn")
    client = DossierClient(deps=graph_deps, temporal=temporal_env.client,
                           settings=Settings(temporal_task_queue=task_queue), account_id=account_id, poll_seconds=0.2)
    async with build_worker(temporal_env.client, graph_deps, task_queue=task_queue,
                            workflow_failure_exception_types=[Exception], providers=ModelProviders()):
        outcome = await client.chat("Which region drove Q3 2026 revenue? Write me a short report.")
    runs = outcome.result.model_run_ids
    assert outcome.result.status == "answered" and len(runs) >= 4

    last = await client.runs.explain(runs[-1])
    made_by = {link.id for row in last.included for link in row.provenance if link.kind == "model_run"}
    assert made_by & set(runs[:-1]), "the tool calls' chains name the runs that made them"
    chain = next(row.provenance for row in last.included if row.ref.startswith("tool_call:"))
    assert [link.kind for link in chain][:2] == ["tool_call", "model_run"]
    assert {"branch", "participant"} <= {link.kind for link in chain}
    assert last.rehydrations or any(row.rule == "appended" for row in last.included)

    # Consecutive calls of the tool loop: the second repeats the first's messages and appends its step.
    step = await client.runs.diff(runs[1])
    assert (step.before.model_run_id, step.after.model_run_id) == (runs[0], runs[1])
    assert step.shared_prefix_messages > 0 and step.added
    assert all(change.side == "added" for change in step.messages)


async def test_why_not_finds_a_user_memory_however_many_the_account_has(graph_deps) -> None:
    """A user memory is looked up by its id, not found by scanning the newest ones: an old memory of an
    account with more than 10,000 is still a record of the account, and another account's stays unknown."""
    from sqlalchemy import text

    from store import conversations, user_memories

    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="many user memories")
        other_id = await conversations.create_account(session, name="another account")
        oldest = await user_memories.put_user_memory(session, account_id, "prefers metric units")
        foreign = await user_memories.put_user_memory(session, other_id, "the other account's memory")
        await session.execute(text(
            "INSERT INTO user_memories (id, account_id, seq, text) "
            "SELECT CAST(gen_random_uuid() AS text), :account, 1 + s, 'later memory ' || s "
            "FROM generate_series(1, 10000) AS s"), {"account": account_id})
    assert await audit._record_ref(graph_deps, account_id, oldest.id) == f"user_memory:{oldest.id}"
    assert await audit._record_ref(graph_deps, account_id, f"user_memory:{oldest.id}") == f"user_memory:{oldest.id}"
    for asked in (foreign.id, f"user_memory:{foreign.id}"):
        with pytest.raises(audit.NotFoundError):
            await audit._record_ref(graph_deps, account_id, asked)


async def test_diff_finds_the_previous_call_behind_ten_thousand_later_assemblies(graph_deps) -> None:
    """The previous call is one indexed query, not the newest 10,000 assemblies of the conversation searched."""
    from sqlalchemy import text

    from store.models import ContextAssembly

    outcome = await run_scenario(scenario("stale_connected_app_memory"), graph_deps)
    async with graph_deps.sessions() as session, session.begin():
        await messages.append_message(session, outcome.account_id, outcome.conversation_id, NewMessage(
            branch_id=outcome.boundary.branch_id, role=MessageRole.USER, content="And on Sunday?"))
        run = await messages.start_model_run(session, outcome.account_id, outcome.conversation_id,
                                             outcome.boundary.branch_id, outcome.boundary.participant_id)
    boundary = outcome.boundary.model_copy(update={"model_run_id": run.id,
                                                   "now": outcome.boundary.now + timedelta(minutes=1)})
    second = await assemble_context(graph_deps, boundary)
    copied = [c.name for c in ContextAssembly.__table__.columns
              if c.name not in ("id", "model_run_id", "snapshot_seq", "created_at")]
    async with graph_deps.sessions() as session, session.begin():  # later assemblies of the same participant
        await session.execute(text(
            f"INSERT INTO context_assemblies (id, snapshot_seq, {', '.join(copied)}) "
            f"SELECT CAST(gen_random_uuid() AS text), snapshot_seq + 1000 + s, {', '.join(copied)} "
            "FROM context_assemblies, generate_series(1, 10000) AS s WHERE id = :id"), {"id": second.assembly_id})
    result = await audit.diff(graph_deps, outcome.account_id, run.id)
    assert (result.before.model_run_id, result.after.model_run_id) == (outcome.model_run_id, run.id)
    with pytest.raises(audit.NotFoundError):
        await audit.diff(graph_deps, outcome.account_id, outcome.model_run_id)
