"""``scripted:digest`` (a scheduled job), ``flaky``, ``sleeper`` and ``echo``."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from activities.providers.scripted.context import read_context
from activities.providers.scripted.scripts.diagnostics import fail_times, sleep_seconds
from policy.enums import RuntimeKind, ToolCallStatus

SCHEDULED = "Scheduled run 2026-11-30 08:00:00 UTC (support-digest): {}"
"""The opening message of a scheduled run, as ``write_scheduled_prompt`` writes it (speaker ``Scheduler``)."""


@pytest.mark.parametrize(("prompt", "group_by"), [
    ("Summarise this month's support tickets.", "priority"),
    ("Summarise support tickets by status.", "status"),
])
async def test_the_digest_lists_aggregates_and_answers_in_one_paragraph(make_world, prompt, group_by):
    world = make_world("digest", name="Digest", runtime_kind=RuntimeKind.SCHEDULED_JOB)
    world.say(SCHEDULED.format(prompt), label="Scheduler")
    answer = (await world.run()).text
    assert [(c.name, c.arguments) for c in world.calls] == [
        ("workspace.list_files", {}),
        ("table.aggregate", {"path": "support/tickets-november.csv", "group_by": group_by,
                             "value": "first_response_min"}),
    ]
    data = json.loads(world.result_of("table.aggregate"))
    assert "\n" not in answer
    assert answer.startswith(
        f"Support digest for support/tickets-november.csv (listed in "
        f"{world.cited('workspace.list_files')}, aggregated in "
        f"{world.cited('table.aggregate')}): 30 tickets by {group_by}: ")
    for group in data["groups"]:
        average = (Decimal(group["sum"]) / group["rows"]).quantize(Decimal("0.1"))
        assert f"{group['group']} {group['rows']} ticket(s), avg first_response_min {average}" in answer
    assert f"Total first_response_min {data['total']}" in answer


async def test_the_priority_digest_names_the_slowest_priority(make_world):
    world = make_world("digest", name="Digest", runtime_kind=RuntimeKind.SCHEDULED_JOB)
    world.say(SCHEDULED.format("Summarise support tickets."), label="Scheduler")
    assert (await world.run()).text.endswith("the slowest average is P4.")


@pytest.mark.parametrize(("message", "times", "attempt"), [
    ("Run the flaky diagnostic.", 2, 3),
    ("Run diag.flaky and let it fail 4 times.", 4, 5),
    ("fail 0 times", 0, 1),
])
async def test_flaky_recovers_within_its_retry_policy(make_world, message, times, attempt):
    world = make_world("flaky")
    world.say(message)
    first = await world.step()
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("diag.flaky", {"fail_times": times})]
    answer = (await world.step()).text
    flaky = world.call_of("diag.flaky")
    assert (flaky.status, flaky.attempts) == (ToolCallStatus.SUCCEEDED, attempt)
    assert answer == (f"diag.flaky succeeded on attempt {attempt} {world.cited('diag.flaky')} "
                      f"after {times} planned transient failure(s): the retries recovered.")


async def test_flaky_past_its_attempts_reports_the_open_failure(make_world):
    world = make_world("flaky")
    world.say("Make the flaky tool fail 7 times.")
    await world.step()
    failed = world.call_of("diag.flaky")
    assert (failed.status, failed.attempts) == (ToolCallStatus.FAILED, 5)
    # The retry-critical failure is in the context the answer is made from: the call's native tool message.
    [line] = [m for m in read_context(world.context()).memories if m.failed]
    assert (line.tool, line.text_attempts, line.cite) == ("diag.flaky", 5, world.cite(failed))
    assert "retry-critical" in line.text
    answer = (await world.step()).text
    assert answer == (
        f"diag.flaky failed after 5 attempt(s), retry-critical {world.cite(failed)}: ToolExecutionError: "
        "transient failure 5/7: diag.flaky fails its first 7 attempt(s) on purpose. The retries did not recover."
    )


async def test_the_sleeper_sleeps_with_heartbeats(make_world):
    world = make_world("sleeper")
    world.say("Sleep for 0.4 seconds, please.")
    first = await world.step()
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("diag.sleep", {"seconds": 0.4})]
    assert world.heartbeats == [0.2, 0.4]
    answer = (await world.step()).text
    assert answer == f"Slept 0.4 s {world.cited('diag.sleep')}, heartbeating throughout."


@pytest.mark.parametrize(("text", "times"), [
    ("fail 3 times", 3), ("3 failures please", 3), ("failing 6", 6), ("just run it", 2),
    ("Scheduled run 2026-11-30: flaky check", 2),
])
def test_fail_times_from_the_message(text, times):
    assert fail_times(text) == times


@pytest.mark.parametrize(("text", "seconds"), [
    ("sleep 7 seconds", 7), ("wait 2.5s", 2.5), ("sleep for 3", 3), ("take a nap", 5), ("0.2 sec", 0.2),
])
def test_sleep_seconds_from_the_message(text, seconds):
    assert sleep_seconds(text) == seconds


async def test_echo(make_world):
    world = make_world("echo")
    world.say("Is anyone there?")
    reply = await world.step()
    assert reply.tool_calls == () and reply.text == "You said: Is anyone there?"
