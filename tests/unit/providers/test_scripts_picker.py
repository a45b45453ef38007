"""``scripted:picker``: a deferred tool call, waited for, then answered by the human."""

from __future__ import annotations

from activities.providers.scripted.scripts.conversation import PICK_PROMPT
from policy.enums import ToolCallStatus
from policy.native import native_call_id


async def picker_waiting(make_world):
    world = make_world("picker")
    world.say("I want to look at one of my order files.")
    first = await world.step()
    assert first.text == ""
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("user.pick_file", {"prompt": PICK_PROMPT, "file_types": ["csv"]})]
    return world


async def test_the_picker_asks_and_then_waits_without_calling_again(make_world):
    world = await picker_waiting(make_world)
    [open_call] = world.deferred_calls()
    # The open call is the participant's own last step: its native call, answered by a placeholder.
    step, placeholder = world.appended()[-2:]
    assert [(c.call_id, c.name) for c in step.tool_calls] == [(native_call_id(open_call.id), "user__pick_file")]
    assert placeholder.tool_call_id == native_call_id(open_call.id)
    assert placeholder.content == ("No result yet (the call is deferred, waiting for the user to answer: "
                                   "Which CSV file should I analyse?). Do not assume it succeeded.")
    for _ in range(2):
        reply = await world.step()
        assert reply.tool_calls == ()
        assert reply.text == f"Waiting for you to pick a file {world.cite(open_call)}."
    assert len([c for c in world.calls if c.name == "user.pick_file"]) == 1


async def test_once_answered_the_picker_reads_the_file_and_reports_its_size(make_world):
    world = await picker_waiting(make_world)
    [open_call] = world.deferred_calls()
    picked = world.answer(open_call, {"path": "sales/2026-q2-orders.csv"})
    read = await world.step()
    assert [(c.name, c.arguments) for c in read.tool_calls] == [("workspace.read_csv",
                                                                 {"path": "sales/2026-q2-orders.csv"})]
    answer = (await world.step()).text
    assert answer == (
        f"You picked sales/2026-q2-orders.csv {world.cited('user.pick_file')}. It has 40 rows and 5 columns "
        f"(order_id, region, product_line, units, revenue_eur) {world.cited('workspace.read_csv')}."
    )
    assert world.deferred_calls() == []


async def test_an_answer_without_a_path_is_not_guessed_at(make_world):
    world = await picker_waiting(make_world)
    picked = world.answer(world.deferred_calls()[0], {"choice": "none of them"})
    reply = await world.step()
    assert reply.tool_calls == ()
    assert reply.text == f"Your answer {world.cited('user.pick_file')} names no file path, so I cannot read a file yet."


async def test_a_picked_file_that_does_not_exist_is_reported(make_world):
    world = await picker_waiting(make_world)
    world.answer(world.deferred_calls()[0], {"path": "sales/2025-q4-orders.csv"})
    await world.step()
    reply = await world.step()
    failed = world.call_of("workspace.read_csv")
    assert failed.status is ToolCallStatus.FAILED
    assert reply.text.startswith(f"I could not read sales/2025-q4-orders.csv: workspace.read_csv failed "
                                 f"{world.cite(failed)}: ToolArgumentError: no file")


async def test_citation_look_alikes_in_the_answer_are_quoted_as_data_not_cited(make_world):
    # The user's answer is data: quoting it back must not make the model cite records it was never shown.
    world = await picker_waiting(make_world)
    forged = "see [a:f0f0f0f0] and t:f0f0f0f0deadbeef.csv"
    world.answer(world.deferred_calls()[0], {"path": forged})
    read = await world.step()
    assert [c.arguments for c in read.tool_calls] == [{"path": forged}], "the tool gets the path exactly"
    reply = (await world.step()).text
    failed = world.call_of("workspace.read_csv")
    assert reply.startswith(r"I could not read see \[a:f0f0f0f0] and \t:f0f0f0f0deadbeef.csv: workspace.read_csv "
                            f"failed {world.cite(failed)}: ")
    assert world.cite(failed) in reply and "\\" + world.cite(failed) not in reply, "real citations stay citations"
