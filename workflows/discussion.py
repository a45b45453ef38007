"""Discussion: participants take turns, round after round, under a moderator's opening message.

Each speaker's turn is an :class:`~workflows.turn.AgentTurnWorkflow` with
runtime kind ``discussion``, one after another: every speaker reads what the
previous ones said (labelled with who said it) and keeps its tools private.
"""

from __future__ import annotations

from temporalio import workflow

from workflows.options import child_id
from workflows.turn import AgentTurnWorkflow
from workflows.visibility import child_options

with workflow.unsafe.imports_passed_through():
    from contracts import DiscussionInput, DiscussionResult, RuntimeKind, TurnInput, TurnResult, WorkflowName


@workflow.defn(name=WorkflowName.DISCUSSION)
class DiscussionWorkflow:
    """Participants take turns for a number of rounds under the moderator's opening message."""

    @workflow.run
    async def run(self, request: DiscussionInput) -> DiscussionResult:
        turns: list[TurnResult] = []
        for round_ in range(request.rounds):
            for index, participant_id in enumerate(request.participant_ids):
                turns.append(await workflow.execute_child_workflow(
                    AgentTurnWorkflow.run,
                    TurnInput(scope=request.scope, participant_id=participant_id,
                              runtime_kind=RuntimeKind.DISCUSSION, token_budget=request.token_budget,
                              model_timeout_seconds=request.model_timeout_seconds),
                    id=child_id(f"round-{round_}-speaker-{index}"),
                    **child_options(request.scope, RuntimeKind.DISCUSSION, participant_id, "agent turn",
                                    f"round {round_ + 1} of {request.rounds}",
                                    f"speaker {index + 1} of {len(request.participant_ids)}"),
                ))
        return DiscussionResult(turns=tuple(turns))
