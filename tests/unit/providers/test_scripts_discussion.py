"""``scripted:panelist``: a discussion turn that answers the latest speaker and obeys the moderator."""

from __future__ import annotations

import re

import pytest

from activities.providers.scripted.scripts.conversation import sentence_limit
from policy.enums import PrivacyClass, RuntimeKind, VisibilityScope
from policy.records import ToolMemoryRecord
from scripted_world import BRANCH, NOW, World

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [part for part in _SENTENCE_END.split(text.strip()) if part]


def panel(make_world) -> tuple[World, str]:
    world = make_world("panelist", name="Optimist", runtime_kind=RuntimeKind.DISCUSSION)
    critic = world.add_participant("Critic")
    world.say("Discuss: is Q3 revenue in sales/2026-q3-orders.csv healthy?")
    world.say("Q3 revenue of 458080.39 leans on one region.", label="Critic", author=critic)
    return world, critic


async def test_first_turn_reads_evidence_then_answers_in_three_sentences(make_world):
    world, _ = panel(make_world)
    first = await world.step()
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("workspace.read_csv",
                                                                  {"path": "sales/2026-q3-orders.csv"})]
    # Discussion tool state is private to the participant that made it.
    assert world.call_of("workspace.read_csv").visibility is VisibilityScope.PARTICIPANT_PRIVATE
    answer = (await world.step()).text
    evidence = world.cited("workspace.read_csv")
    assert answer == (
        "Critic argues “Q3 revenue of 458080.39 leans on one region”. "
        f"The data {evidence} shows sales/2026-q3-orders.csv has 60 rows with units sum 4619; "
        "revenue_eur sum 458080.39. That matches those figures, so I agree."
    )
    assert len(sentences(answer)) == 3


async def test_later_turns_do_not_call_tools_again(make_world):
    world, critic = panel(make_world)
    await world.run()
    world.say("Benelux alone is 133510.04 of it.", label="Critic", author=critic)
    reply = await world.step()
    assert reply.tool_calls == ()
    assert world.cited("workspace.read_csv") in reply.text
    assert reply.text.startswith("Critic argues “Benelux alone is 133510")
    assert reply.text.endswith("I would test that claim against these figures before we rely on it.")
    assert len([c for c in world.calls if c.name == "workspace.read_csv"]) == 1


@pytest.mark.parametrize(("directive", "count"), [
    ("Keep every answer to one sentence.", 1),
    ("Answer in at most 2 sentences.", 2),
    ("Be concise: no more than two sentences each.", 2),
    ("Stay on revenue; five sentences are fine.", 3),  # the panelist's own limit is three
])
async def test_the_moderator_directive_limits_the_answer(make_world, directive, count):
    world, critic = panel(make_world)
    await world.run()
    world.say(directive, label="Moderator", directive=True)
    world.say("Benelux carries the quarter.", label="Critic", author=critic)
    assert f"Moderator directive: {directive}" in [m.content for m in world.context()]
    reply = await world.step()
    assert len(sentences(reply.text)) == count
    assert world.cited("workspace.read_csv") in reply.text


async def test_a_directive_can_forbid_tools(make_world):
    world, _ = panel(make_world)
    world.say("No tools this round; argue from what you know.", label="Moderator", directive=True)
    reply = await world.step()
    assert reply.tool_calls == ()
    assert "I have no data in view to check this against." in reply.text


async def test_another_participants_private_evidence_is_not_used(make_world):
    world, critic = panel(make_world)
    world.memories.append(ToolMemoryRecord(
        id="critic-memory", branch_id=BRANCH, seq=3, owner_participant_id=critic, source_artifact_ids=(),
        source_tool="workspace.read_csv", subject_key="workspace.read_csv:critic", title="workspace.read_csv(path=x)",
        summary="workspace.read_csv(path=sales/2026-q2-orders.csv) → 40 rows × 5 cols [a]; revenue_eur sum 1.00",
        visibility=VisibilityScope.PARTICIPANT_PRIVATE, privacy=PrivacyClass.USER, freshness="durable",
        observed_at=NOW))
    assert "critic" not in world.system_text().lower()
    first = await world.step()
    assert [c.name for c in first.tool_calls] == ["workspace.read_csv"]


@pytest.mark.parametrize(("directives", "limit"), [
    ((), 3),
    (("Answer in one sentence.",), 1),
    (("Two sentences max.", "Now: 1 sentence."), 1),
    (("Use 0 sentences.",), 1),
])
def test_sentence_limit(directives, limit):
    assert sentence_limit(directives) == limit
