"""Multi-model turn: several participants answer the same user message, each with its own tool state.

Each participant runs an :class:`~workflows.turn.AgentTurnWorkflow` child with
runtime kind ``multi_model``, in parallel; tool state stays private to the
participant that made the call (see ``policy.tools.default_visibility``).
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

from workflows.options import child_id
from workflows.turn import AgentTurnWorkflow
from workflows.visibility import child_options

with workflow.unsafe.imports_passed_through():
    from contracts import MultiModelInput, MultiModelResult, RuntimeKind, TurnInput, WorkflowName


@workflow.defn(name=WorkflowName.MULTI_MODEL_TURN)
class MultiModelTurnWorkflow:
    """N participants answer the same user message in parallel, tool state private to each."""

    @workflow.run
    async def run(self, request: MultiModelInput) -> MultiModelResult:
        turns = [
            workflow.execute_child_workflow(
                AgentTurnWorkflow.run,
                TurnInput(scope=request.scope, participant_id=participant_id, runtime_kind=RuntimeKind.MULTI_MODEL,
                          token_budget=request.token_budget, model_timeout_seconds=request.model_timeout_seconds),
                id=child_id(f"model-{index}"),
                **child_options(request.scope, RuntimeKind.MULTI_MODEL, participant_id, "agent turn",
                                f"participant {index + 1} of {len(request.participant_ids)}"),
            )
            for index, participant_id in enumerate(request.participant_ids)
        ]
        return MultiModelResult(results=tuple(await asyncio.gather(*turns)))
