"""``client.schedules``: recurring jobs, each run a scheduled agent turn in the graph.

Temporal schedules carry the job's ids and its prompt; where each run happened is read from the graph.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleSpec,
    ScheduleState,
)

from activities.deps import GraphDeps
from contracts import ScheduledJobInput, Scope, TurnResult, WorkflowName
from dossier.client.errors import ClientError, InvalidInputError
from dossier.client.records import TurnOutcome
from dossier.settings import Settings
from policy.enums import RuntimeKind
from store import messages


class _Turns(Protocol):
    """What a schedule needs of the client: the scope and participant its runs start in."""

    deps: GraphDeps
    temporal: Client
    settings: Settings
    account_id: str

    def check_text(self, text: str, what: str = ...) -> str: ...
    def _check_models(self, *specs: str) -> None: ...
    async def _scope(self, conversation_id: str | None, branch_id: str | None, title: str) -> Scope: ...
    async def participant(self, scope: Scope, spec: str) -> str: ...
    def _visibility(self, scope: Scope, runtime_kind: RuntimeKind | None, participant_id: str | None,
                    what: str) -> dict[str, Any]: ...
    def ui_url(self, workflow_id: str) -> str | None: ...
    async def message_text(self, message_id: str | None) -> str | None: ...


@dataclass(frozen=True)
class Schedules:
    """The account's schedules."""

    client: _Turns

    async def create(self, schedule_id: str, prompt: str, *, every: timedelta, model: str = "scripted:digest",
                              conversation_id: str | None = None, branch_id: str | None = None,
                              paused: bool = False) -> ScheduleHandle:
        """A recurring job: every ``every``, the prompt opens a scheduled agent turn."""
        self.client.check_text(prompt, "prompt")
        if every <= timedelta(0):
            raise InvalidInputError(f"the interval must be positive, got {every.total_seconds():g} s")
        self.client._check_models(model)
        scope = await self.client._scope(conversation_id, branch_id, f"schedule {schedule_id}")
        participant = await self.client.participant(scope, model)
        job = ScheduledJobInput(scope=scope, participant_id=participant, job_name=schedule_id, prompt=prompt,
                                model_timeout_seconds=self.client.settings.model_timeout_seconds)
        return await self.client.temporal.create_schedule(
            schedule_id,
            Schedule(
                action=ScheduleActionStartWorkflow(WorkflowName.SCHEDULED_JOB, job, id=f"job-{schedule_id}",
                                                   task_queue=self.client.settings.temporal_task_queue,
                                                   **_schedule_visibility(self.client._visibility(
                                                       scope, RuntimeKind.SCHEDULED_JOB, participant,
                                                       "scheduled job"))),
                spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
                state=ScheduleState(paused=paused, note=f"dossier job {schedule_id}"),
            ),
        )

    async def wait_run(self, schedule_id: str, *, after: int = 0, timeout: float = 120.0) -> TurnOutcome:
        """Wait for the schedule's run number ``after + 1`` to finish; returns it as a turn."""
        handle = self.client.temporal.get_schedule_handle(schedule_id)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            description = await handle.describe()
            actions = description.info.recent_actions
            if len(actions) > after:
                workflow_id = actions[after].action.workflow_id
                break
            if asyncio.get_running_loop().time() > deadline:
                raise ClientError(f"schedule {schedule_id} did not fire within {timeout:.0f}s")
            await asyncio.sleep(0.25)
        result = await self.client.temporal.get_workflow_handle(workflow_id, result_type=TurnResult).result()
        conversation_id = branch_id = ""
        if result.model_run_ids:  # where the run happened is in the graph, not in the schedule's payload
            async with self.client.deps.sessions() as session:
                run = await messages.get_model_run(session, self.client.account_id, result.model_run_ids[0])
            conversation_id, branch_id = run.conversation_id, run.branch_id
        return TurnOutcome(conversation_id, branch_id, result.participant_id, schedule_id, workflow_id,
                           self.client.ui_url(workflow_id), result, await self.client.message_text(result.message_id))

    async def list(self) -> list[dict[str, Any]]:
        """Every schedule with its state and recent actions."""
        rows = []
        async for entry in await self.client.temporal.list_schedules():
            info = entry.info
            rows.append({
                "schedule_id": entry.id,
                "paused": bool(entry.schedule and entry.schedule.state.paused),
                "recent_runs": [action.action.workflow_id for action in (info.recent_actions if info else [])],
                "next_runs": [when.isoformat() for when in (info.next_action_times if info else [])][:3],
            })
        return rows

    async def trigger(self, schedule_id: str) -> None:
        """Fire a schedule now."""
        await self.client.temporal.get_schedule_handle(schedule_id).trigger()

    async def pause(self, schedule_id: str, *, paused: bool = True) -> None:
        """Pause (or unpause) a schedule."""
        handle = self.client.temporal.get_schedule_handle(schedule_id)
        await (handle.pause() if paused else handle.unpause())

    async def delete(self, schedule_id: str) -> None:
        """Delete a schedule (runs already made stay in the graph)."""
        await self.client.temporal.get_schedule_handle(schedule_id).delete()


def _schedule_visibility(options: dict[str, Any]) -> dict[str, Any]:
    """:meth:`DossierClient._visibility`'s options under the names a schedule's start action takes."""
    return {"typed_search_attributes": options["search_attributes"], "static_summary": options["static_summary"],
            "memo": options["memo"]}


__all__ = ["Schedules"]
