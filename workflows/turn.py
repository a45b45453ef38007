"""The agent turn: assemble, call the model, run its tools, until it answers.

Orchestration only. Every step is an activity named by
:class:`contracts.ActivityName` and every argument is an id (see
:mod:`contracts`): the workflow never holds the transcript, a prompt or a
tool payload, so its history stays small however long the conversation is.
Ids the steps write under (model run, assembly) come from
``workflow.uuid4()``, which makes each activity's write idempotent across
retries and replays.

A deferred tool (a document picker) parks the turn on a durable wait until
``answer_tool`` signals that the human's answer was captured; ``status``
shows what it waits for. After ``rounds_per_run`` model calls the turn writes
a tool-loop checkpoint and continues as new, carrying only ids.

When the provider refuses a context as too long for the model's window, the
turn re-assembles it once, in a new model run, within the smaller token
budget the failure names (``contracts.CONTEXT_TOO_LONG_ERROR``), and keeps that
budget for the rest of the turn; the refused run keeps the provider's error
and the new assembly a decision saying why it is smaller.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.options import (
    ANSWER_CONFIRM_RETRY,
    ANSWER_CONFIRMED_PATCH,
    CONTEXT_REASSEMBLY_PATCH,
    MODEL_HEARTBEAT_TIMEOUT,
    MODEL_RETRY,
    STEP_RETRY,
    STEP_TIMEOUT,
    TOOL_RETRY_INITIAL,
    model_call_timeout,
)
from workflows.visibility import run_link, summary

with workflow.unsafe.imports_passed_through():
    from contracts import (
        ANSWER_TOOL_SIGNAL,
        CONTEXT_TOO_LONG_ERROR,
        STATUS_QUERY,
        ActivityName,
        AnswerToolInput,
        AssembleInput,
        AssembleResult,
        CallModelInput,
        CheckpointInput,
        ModelRunInput,
        ModelStepResult,
        ToolCallInput,
        ToolStepInput,
        ToolStepResult,
        TurnInput,
        TurnResult,
        TurnStatus,
        WorkflowName,
    )


@workflow.defn(name=WorkflowName.AGENT_TURN)
class AgentTurnWorkflow:
    """One turn of one participant (chat, branch send, multi-model member, child, resume, job)."""

    def __init__(self) -> None:
        self._round = 0
        self._waiting: set[str] = set()
        self._answered: set[str] = set()
        self._runs: list[str] = []
        self._budget: int | None = None
        """The turn's token budget: its input's, until a context refused as too long lowers it."""

    @workflow.signal(name=ANSWER_TOOL_SIGNAL)
    def answer_tool(self, answer: AnswerToolInput) -> None:
        """The human's answer to a deferred tool call was captured; resume."""
        self._answered.add(answer.tool_call_id)

    @workflow.query(name=STATUS_QUERY)
    def status(self) -> TurnStatus:
        """Where the turn is: model calls so far and deferred calls it waits on."""
        return TurnStatus(round=self._round, waiting_for_tool_call_ids=tuple(sorted(self._waiting)),
                          model_run_ids=tuple(self._runs))

    @workflow.run
    async def run(self, turn: TurnInput) -> TurnResult:
        self._round = turn.round
        self._runs = list(turn.model_run_ids)
        self._budget = turn.token_budget
        tool_call_ids = list(turn.tool_call_ids)
        checkpoint_id = turn.checkpoint_id
        started = turn.round
        while self._round < turn.max_rounds:
            if self._round - started >= turn.rounds_per_run:
                checkpoint = await workflow.execute_activity(
                    ActivityName.WRITE_CHECKPOINT,
                    CheckpointInput(scope=turn.scope, participant_id=turn.participant_id, kind="tool_loop",
                                    model_run_ids=tuple(self._runs), next_step="continue the tool loop"),
                    start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=str,
                    summary=summary("write checkpoint", "tool_loop", f"{len(self._runs)} model runs"),
                )
                workflow.logger.info("turn continues as new after %d model calls", self._round)
                workflow.continue_as_new(turn.model_copy(update={
                    "round": self._round, "model_run_ids": tuple(self._runs), "checkpoint_id": checkpoint,
                    "token_budget": self._budget, "tool_call_ids": tuple(tool_call_ids),
                }))
            step = await self._model_step(turn, checkpoint_id)
            checkpoint_id = None  # the restore is logged once, on the first call after it
            if step.answered:
                return TurnResult(status="answered", message_id=step.message_id, model_run_ids=tuple(self._runs),
                                  tool_call_ids=tuple(tool_call_ids), participant_id=turn.participant_id)
            for tool in step.tools:
                tool_call_ids.append(tool.tool_call_id)
                await self._run_tool(turn, tool)
        workflow.logger.warning("turn stopped after %d model calls without an answer", self._round)
        return TurnResult(status="max_rounds", model_run_ids=tuple(self._runs), tool_call_ids=tuple(tool_call_ids),
                          participant_id=turn.participant_id)

    async def _model_step(self, turn: TurnInput, checkpoint_id: str | None) -> ModelStepResult:
        self._round += 1
        try:
            return await self._model_run(turn, checkpoint_id, self._budget)
        except ActivityError as error:
            refused = self._refused_run(error)
            if refused is None or not workflow.patched(CONTEXT_REASSEMBLY_PATCH):
                raise
            run_id, budget = refused
        # Once: a context refused again within the smaller budget fails the turn with the provider's error.
        workflow.logger.warning("model run %s: context too long for the model; re-assembling within %d tokens",
                                run_id, budget)
        self._budget = budget
        return await self._model_run(turn, checkpoint_id, budget, reassembly_of=run_id)

    def _refused_run(self, error: ActivityError) -> tuple[str, int] | None:
        """``(run id, smaller budget)`` when the model call failed on a context too long for the model."""
        cause = error.cause
        if not isinstance(cause, ApplicationError) or cause.type != CONTEXT_TOO_LONG_ERROR or not cause.details:
            return None
        budget = cause.details[0]
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
            return None
        return self._runs[-1], budget

    async def _model_run(self, turn: TurnInput, checkpoint_id: str | None, budget: int | None,
                         reassembly_of: str | None = None) -> ModelStepResult:
        run_id = str(workflow.uuid4())
        self._runs.append(run_id)
        # What the UI shows for each step: kind, round and the run's inspector page; never text.
        kind, step, link = turn.runtime_kind.value, f"model call {self._round}", run_link(run_id)
        await workflow.execute_activity(
            ActivityName.START_MODEL_RUN,
            ModelRunInput(scope=turn.scope, participant_id=turn.participant_id, model_run_id=run_id,
                          runtime_kind=turn.runtime_kind, parent_model_run_id=turn.parent_model_run_id),
            start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=str,
            summary=summary("start model run", kind, step, f"run {run_id}", link),
        )
        assembly: AssembleResult = await workflow.execute_activity(
            ActivityName.ASSEMBLE_CONTEXT,
            AssembleInput(scope=turn.scope, participant_id=turn.participant_id, model_run_id=run_id,
                          assembly_id=str(workflow.uuid4()), runtime_kind=turn.runtime_kind, now=workflow.now(),
                          token_budget=budget, checkpoint_id=checkpoint_id,
                          reassembly_of_model_run_id=reassembly_of),
            start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=AssembleResult,
            summary=summary("assemble context", kind, step,
                            f"budget {budget}" if budget is not None else None,
                            "re-assembly" if reassembly_of else None, link),
        )
        return await workflow.execute_activity(
            ActivityName.CALL_MODEL,
            CallModelInput(scope=turn.scope, participant_id=turn.participant_id, model_run_id=run_id,
                           assembly_id=assembly.assembly_id, runtime_kind=turn.runtime_kind),
            # A slow model is waited for; a dead worker is noticed by its missing heartbeats.
            start_to_close_timeout=model_call_timeout(turn.model_timeout_seconds),
            heartbeat_timeout=MODEL_HEARTBEAT_TIMEOUT, retry_policy=MODEL_RETRY, result_type=ModelStepResult,
            summary=summary("call model", kind, step,
                            f"{assembly.assembled_tokens} assembled tokens",
                            f"{assembly.legacy_tokens} replay tokens", link),
        )

    async def _answer_committed(self, call: ToolCallInput) -> bool:
        """Whether the signalled answer reached the graph (the client commits it once the signal has landed)."""
        try:
            await workflow.execute_activity(ActivityName.CONFIRM_ANSWER, call, start_to_close_timeout=STEP_TIMEOUT,
                                            retry_policy=ANSWER_CONFIRM_RETRY,
                                            summary=summary("confirm answer", f"tool call {call.tool_call_id}"))
        except ActivityError:
            workflow.logger.warning("the answer to tool call %s was signalled but never committed", call.tool_call_id)
            return False
        return True

    async def _run_tool(self, turn: TurnInput, tool: ToolStepInput) -> ToolStepResult | None:
        call = ToolCallInput(account_id=turn.scope.account_id, tool_call_id=tool.tool_call_id)
        if tool.deferred:
            # Durable wait: days are fine, the worker holds nothing while it waits.
            self._waiting.add(tool.tool_call_id)
            while True:
                await workflow.wait_condition(lambda: tool.tool_call_id in self._answered)
                if not workflow.patched(ANSWER_CONFIRMED_PATCH) or await self._answer_committed(call):
                    break
                # The answering client signalled but never committed (it died in between): wait again.
                self._answered.discard(tool.tool_call_id)
            self._waiting.discard(tool.tool_call_id)
            return None
        try:
            return await workflow.execute_activity(
                ActivityName.EXECUTE_TOOL, call,
                start_to_close_timeout=timedelta(seconds=tool.timeout_seconds),
                heartbeat_timeout=timedelta(seconds=tool.heartbeat_seconds) if tool.heartbeat_seconds else None,
                retry_policy=RetryPolicy(initial_interval=TOOL_RETRY_INITIAL, backoff_coefficient=2.0,
                                         maximum_attempts=tool.max_attempts),
                result_type=ToolStepResult,
                summary=summary("execute tool", turn.runtime_kind.value, f"model call {self._round}",
                                f"tool call {tool.tool_call_id}", f"up to {tool.max_attempts} attempts"),
            )
        except ActivityError:
            # Every attempt failed: the last error becomes the call's failed result, which the
            # policy keeps in view as recovery state instead of letting the turn crash.
            workflow.logger.warning("tool call %s failed every attempt; capturing its last error", tool.tool_call_id)
            return await workflow.execute_activity(
                ActivityName.FINALIZE_TOOL_FAILURE, call,
                start_to_close_timeout=STEP_TIMEOUT, retry_policy=STEP_RETRY, result_type=ToolStepResult,
                summary=summary("capture tool failure", f"tool call {tool.tool_call_id}",
                                f"after {tool.max_attempts} attempts"),
            )
