"""``scripted:researcher`` (a subagent child) and ``scripted:coordinator`` (its parent)."""

from __future__ import annotations

import json

from policy.enums import RuntimeKind, VisibilityScope
from policy.lines import inert
from scripted_world import World, content_addressed_files


def researcher(make_world) -> World:
    return make_world("researcher", name="researcher-1", runtime_kind=RuntimeKind.SUBAGENT_CHILD,
                      stand_ins={"files.write": content_addressed_files})


async def test_the_researcher_reads_the_file_its_task_names(make_world):
    world = researcher(make_world)
    world.say("Compare quarters for the board.")  # the parent's message, visible on the branch
    world.say("Analyse sales/2026-q2-orders.csv by product_line and save your findings.")  # the child's task
    report = (await world.run()).text
    assert [(c.name, c.arguments.get("path", c.arguments.get("name"))) for c in world.calls] == [
        ("workspace.read_csv", "sales/2026-q2-orders.csv"),
        ("table.aggregate", "sales/2026-q2-orders.csv"),
        ("files.write", "2026-q2-orders-findings.md"),
    ]
    assert world.call_of("table.aggregate").arguments["group_by"] == "product_line"
    # A child's tool state is its own until promoted.
    assert {c.visibility for c in world.calls} == {VisibilityScope.PARTICIPANT_PRIVATE}
    aggregate = json.loads(world.result_of("table.aggregate"))
    groups = "; ".join(f"{g['group']} {g['sum']}" for g in aggregate["groups"])
    handle = json.loads(world.result_of("files.write"))
    assert report == (
        f"Findings for sales/2026-q2-orders.csv {world.cited('workspace.read_csv')}: revenue_eur "
        f"total {aggregate['total']} by product_line {world.cited('table.aggregate')}: {groups}. "
        f"Table saved as 2026-q2-orders-findings.md, {handle['bytes']} bytes at {handle['uri']} "
        f"{world.cited('files.write')}."
    )
    assert "\n" not in report  # a one-paragraph report reads as one line when promoted


async def test_the_researcher_defaults_to_the_q3_orders(make_world):
    world = researcher(make_world)
    world.say("Find where revenue comes from.")
    await world.run()
    assert world.call_of("workspace.read_csv").arguments == {"path": "sales/2026-q3-orders.csv"}
    assert world.call_of("table.aggregate").arguments["group_by"] == "region"


async def test_the_coordinator_delegates_when_nothing_came_back(make_world):
    world = make_world("coordinator", name="Coordinator")
    world.say("Compare Q2 and Q3 revenue. Then recommend where to invest.")
    reply = await world.step()
    assert reply.tool_calls == ()
    assert reply.text == ("I will delegate this to subagents: Compare Q2 and Q3 revenue. "
                          "I will summarise their reports when they finish.")


async def test_the_coordinator_summarises_promoted_reports_from_real_children(make_world):
    reports = {}
    for name, task in (("researcher-1", "Analyse sales/2026-q2-orders.csv"),
                       ("researcher-2", "Analyse sales/2026-q3-orders.csv")):
        child = researcher(make_world)
        child.say(task)
        reports[name] = ((await child.run()).text, json.loads(child.result_of("files.write")))

    parent = make_world("coordinator", name="Coordinator")
    parent.say("Compare Q2 and Q3 revenue.")
    # What promote_child_results writes for the parent: each report, each file handle, each failure.
    promoted = []
    for name, (report, handle) in reports.items():
        promoted.append(parent.add_memory(f"subagent {name} succeeded; report: {report}",
                                          source_tool="subagent.report"))
        promoted.append(parent.add_memory(
            f"from subagent {name}: generated file {handle['name']}, {handle['bytes']} bytes at {handle['uri']}",
            source_tool="files.write"))
    failure = parent.add_memory("subagent researcher-3 timed out; report: no report; the run timed out",
                                source_tool="subagent.report")
    batch = parent.add_checkpoint("subagent_batch", {
        "children": [{"participant": "p1", "status": "succeeded", "workflow_id": "w1"},
                     {"participant": "p2", "status": "succeeded", "workflow_id": "w2"},
                     {"participant": "p3", "status": "timed_out", "workflow_id": "w3"}],
        "next_step": "merge the subagents' findings and answer the user"}, references=tuple(m.id for m in promoted))

    answer = (await parent.step()).text
    lines = answer.split("\n")
    assert lines[0] == f"Subagent batch {parent.cite(batch)}: 3 child run(s), 2 succeeded, 1 timed_out."
    assert lines[1] == "3 subagent report(s):"
    # Each report quoted as its context line shows it: the child's citations name records the coordinator
    # was never shown, so they stay escaped data (as the renderer's inert() wrote them), not its own citations.
    assert "[t:" in reports["researcher-1"][0]
    assert lines[2] == f"- researcher-1 (succeeded) {parent.cite(promoted[0])}: {inert(reports['researcher-1'][0])}"
    assert lines[3] == f"- researcher-2 (succeeded) {parent.cite(promoted[2])}: {inert(reports['researcher-2'][0])}"
    assert lines[4] == f"- researcher-3 (timed out) {parent.cite(failure)}: no report; the run timed out"
    for name, (_, handle) in reports.items():
        assert f"- file from {name}: {handle['name']}, {handle['bytes']} bytes at {handle['uri']}" in answer


async def test_the_coordinator_reports_a_batch_without_reports(make_world):
    world = make_world("coordinator", name="Coordinator")
    world.say("Compare Q2 and Q3 revenue.")
    batch = world.add_checkpoint("subagent_batch", {"children": [{"participant": "p1", "status": "failed"}]})
    answer = (await world.step()).text
    assert answer == (f"Subagent batch {world.cite(batch)}: 1 child run(s), 1 failed.\n"
                      "No subagent report has reached me yet.")
