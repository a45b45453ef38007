"""``scripted:analyst`` through real assembled contexts: list, read, aggregate, write, answer."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from activities.providers.scripted.context import read_context
from dossier.runtime import SAMPLE_WORKSPACE
from policy.enums import ToolCallStatus
from scripted_world import ACCOUNT, BUCKET, World, content_addressed_files

Q3 = "sales/2026-q3-orders.csv"
Q3_REPORT = "2026-q3-orders-revenue-eur-by-region.md"


def analyst(make_world, **options) -> World:
    return make_world("analyst", stand_ins={"files.write": content_addressed_files}, **options)


async def test_the_analyst_works_the_whole_pipeline_one_step_per_call(make_world):
    world = analyst(make_world)
    world.say("Summarise Q3 revenue by region and write me a short report.")
    steps = [await world.step() for _ in range(5)]

    planned = [(c.name, c.arguments) for step in steps[:4] for c in step.tool_calls]
    assert [name for name, _ in planned] == ["workspace.list_files", "workspace.read_csv", "table.aggregate",
                                            "files.write"]
    assert planned[0][1] == {}
    assert planned[1][1] == {"path": Q3}
    assert planned[2][1] == {"path": Q3, "group_by": "region", "value": "revenue_eur"}
    assert planned[3][1]["name"] == Q3_REPORT
    for step, request in zip(steps[:4], world.requests, strict=False):
        assert step.text == ""
        assert [c.call_id for c in step.tool_calls] == [f"call_{request.run_id[:8]}_0"]
    assert steps[4].tool_calls == ()
    assert all(c.status is ToolCallStatus.SUCCEEDED for c in world.calls)


async def test_each_step_is_decided_from_what_the_previous_one_put_in_the_context(make_world):
    world = analyst(make_world)
    world.say("Summarise Q3 revenue by region.")
    await world.run()
    # The read was chosen from the listing memory in the second context, and so on down the chain.
    second, third, fourth = (read_context(r.messages) for r in world.requests[1:4])
    assert second.results("workspace.list_files") and not second.results("workspace.read_csv")
    assert third.results("workspace.read_csv", path=Q3) and not third.results("table.aggregate")
    assert fourth.results("table.aggregate", path=Q3, group_by="region", value="revenue_eur")


async def test_the_report_is_built_from_the_aggregate_and_the_answer_cites_its_sources(make_world):
    world = analyst(make_world)
    world.say("Summarise Q3 revenue by region and write me a short report.")
    answer = (await world.run()).text

    content = world.call_of("files.write").arguments["content"]
    aggregate = json.loads(world.result_of("table.aggregate"))
    for group in aggregate["groups"]:
        assert f"| {group['group']} | {group['sum']} | {group['rows']} |" in content
    assert f"| **total** | **{aggregate['total']}** | 60 |" in content
    assert world.cited("table.aggregate") in content

    digest = hashlib.sha256(content.encode()).hexdigest()
    uri = f"s3://{BUCKET}/accounts/{ACCOUNT}/sha256/{digest}"
    assert answer == (
        f"From your workspace listing {world.cited('workspace.list_files')} I read {Q3} "
        f"{world.cited('workspace.read_csv')} (60 rows) and summed revenue_eur by region "
        f"{world.cited('table.aggregate')}: total 458080.39; largest Benelux 133510.04 (10 rows), "
        f"smallest Iberia 46978.68. The report is {Q3_REPORT}, {len(content.encode())} bytes at {uri} "
        f"{world.cited('files.write')}."
    )


@pytest.mark.parametrize(("message", "path", "group_by", "value"), [
    ("How did Q2 go? Revenue by region please.", "sales/2026-q2-orders.csv", "region", "revenue_eur"),
    ("Break down q3 by product_line", Q3, "product_line", "revenue_eur"),
    ("Summarise the November support tickets", "support/tickets-november.csv", "priority", "first_response_min"),
    ("Look at sales/2026-q2-orders.csv", "sales/2026-q2-orders.csv", "region", "revenue_eur"),
])
async def test_the_file_and_columns_follow_the_request(make_world, message, path, group_by, value):
    world = analyst(make_world)
    world.say(message)
    await world.run()
    assert world.call_of("workspace.read_csv").arguments == {"path": path}
    assert world.call_of("table.aggregate").arguments == {"path": path, "group_by": group_by, "value": value}


async def test_a_stale_listing_is_fetched_again_but_durable_results_are_reused(make_world):
    world = analyst(make_world)
    world.say("Summarise Q3 revenue by region.")
    await world.run()
    world.later(hours=13)  # past the listing's 12-hour session freshness
    world.say("And the same for Q2, please.")
    assert "STALE" in world.system_text()
    first = await world.step()
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("workspace.list_files", {})]
    await world.run()
    reads = [c.arguments["path"] for c in world.calls if c.name == "workspace.read_csv"]
    assert reads == [Q3, "sales/2026-q2-orders.csv"]


async def test_a_failed_write_is_reported_with_its_error(make_world):
    world = make_world("analyst")  # no object storage: files.write fails on every attempt
    world.say("Summarise Q3 revenue by region.")
    answer = (await world.run()).text
    failed = world.call_of("files.write")
    assert failed.status is ToolCallStatus.FAILED and failed.attempts == 3
    assert answer == (f"I could not save {Q3_REPORT}: files.write failed {world.cite(failed)}: "
                      "ToolExecutionError: files.write needs object storage, and this runtime has none configured")


async def test_a_failed_read_is_reported_and_retried_when_asked(make_world, tmp_path):
    workspace = tmp_path / "ws"
    shutil.copytree(SAMPLE_WORKSPACE, workspace)
    world = analyst(make_world, workspace=workspace)
    world.say("Summarise Q3 revenue by region.")
    await world.step()  # the listing
    (workspace / Q3).rename(tmp_path / "moved.csv")  # gone before the read
    assert (await world.step()).tool_calls[0].name == "workspace.read_csv"
    answer = (await world.step()).text
    failed = world.call_of("workspace.read_csv")
    assert failed.attempts == 1  # a bad path is permanent: no retries
    assert answer.startswith(f"I could not read {Q3}: workspace.read_csv failed {world.cite(failed)}: "
                             f"ToolArgumentError: no file '{Q3}' in the workspace; use workspace.list_files")

    (tmp_path / "moved.csv").rename(workspace / Q3)
    world.say("It is back, please try again.")
    retry = await world.step()
    assert [(c.name, c.arguments) for c in retry.tool_calls] == [("workspace.read_csv", {"path": Q3})]
    assert "total 458080.39" in (await world.run()).text


async def test_an_open_call_is_waited_for_not_repeated(make_world):
    world = analyst(make_world)
    world.say("Summarise Q3 revenue by region.")
    await world.step()
    pending = world.calls[0].model_copy(update={"id": "pending-read", "call_id": "c-pending", "name":
                                                "workspace.read_csv", "arguments": {"path": Q3},
                                                "status": ToolCallStatus.PENDING, "seq": 99})
    world.calls.append(pending)
    reply = await world.step()
    assert reply.tool_calls == ()
    assert reply.text == (f"I am still waiting for workspace.read_csv {world.cite(pending)} to read {Q3} (pending); "
                          "I will not assume its result.")


async def test_without_tools_the_analyst_says_what_it_needs(make_world):
    world = analyst(make_world, offer_tools=False)
    world.say("Summarise Q3 revenue by region.")
    reply = await world.step()
    assert reply.tool_calls == ()
    assert "workspace.list_files" in reply.text and "not available" in reply.text


async def test_two_runs_of_the_same_conversation_are_identical(make_world):
    transcripts, hashes = [], []
    for _ in range(2):
        world = analyst(make_world)
        world.say("Summarise Q3 revenue by region and write me a short report.")
        await world.run()
        transcripts.append([(m.content, m.tool_calls) for m in world.messages])
        hashes.append(world.assemble().record.content_sha256)
    assert transcripts[0] == transcripts[1]
    assert hashes[0] == hashes[1]
