"""The Temporal activities of an agent turn, over the graph I/O steps.

Each activity takes ids (see :mod:`contracts`), loads what it needs from
Postgres and S3, does one step, writes the outcome back, and returns ids.
Every write is idempotent on an id the workflow chose (model run, assembly,
message) or on the provider's tool-call id, so a retried activity or a
worker that died halfway never duplicates or loses a record.

Activities are registered under :class:`contracts.ActivityName`, the names the
workflows call. Failures are sorted once, by
:func:`activities.errors.sorted_failures`: transient store errors and a
provider's rate limits, timeouts and 5xx are retried by Temporal (after the
provider's ``Retry-After``, when it sent one), bad input (an unknown id, an
unknown model, a request the provider refuses) fails the activity for good,
and a context the provider refuses as too long fails it with
:data:`contracts.CONTEXT_TOO_LONG_ERROR` and the smaller budget to re-assemble
within. A tool's own failure is not an activity failure: it is captured as
the call's result (see :meth:`TurnActivities.execute_tool`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.context import assemble_context as assemble_graph_context
from activities.deps import GraphDeps
from activities.errors import ends_activity, is_retryable, sorted_failures
from activities.heartbeat import heartbeating
from activities.ingest import (
    Ingested,
    ToolOutcome,
    begin_tool_call,
    defer_tool_call,
    ingest_tool_result,
    ingested_result,
    object_recorder,
    record_attempt_failure,
)
from activities.promotion import promotable_calls, promote_child_results
from activities.providers.base import (
    ContextTooLongError,
    ModelProvider,
    ModelRequest,
    ProviderFactory,
)
from activities.providers.config import EndpointConfig
from activities.providers.windows import ContextWindows
from activities.skill_state import offered_tools, skill_catalog
from activities.skills import SkillLibrary
from activities.tools.base import ToolContext, ToolError, UnknownToolError
from activities.tools.registry import ToolRegistry, canonical_name
from contracts import (
    CONTEXT_TOO_LONG_ERROR,
    ActivityName,
    AssembleInput,
    AssembleResult,
    CallModelInput,
    CheckpointInput,
    ModelRunInput,
    ModelStepResult,
    PromoteInput,
    PromoteResult,
    ScheduledPromptInput,
    ToolCallInput,
    ToolStepInput,
    ToolStepResult,
)
from policy.budget import reduced_budget
from policy.enums import DecisionOutcome, MessageRole, RuntimeKind, ToolCallStatus, VisibilityScope
from policy.records import (
    canonical_json,
    ChatMessage,
    GenerationBoundary,
    ParticipantRecord,
    PolicyDecisionRecord,
    ToolCallRecord,
    ToolCallRequest,
)
from store import checkpoints, conversations, messages
from store import tools as tool_store
from store.assemblies import get_context_assembly
from store.errors import IntegrityViolation, NotFoundError, StoreError
from store.records import StoredContextAssembly
from store.writes import NewMessage, NewToolCall

_MESSAGE_NAMESPACE = uuid.UUID("3c1f6f0e-7d54-4b7a-9e1b-2a6f0d9c4e11")

HEARTBEAT_SECONDS = 10.0
"""How often the model-call activity heartbeats while it waits for the provider (well inside the
workflows' heartbeat timeout, so a worker that died mid-call is noticed in about a minute)."""

REFUSAL_CHARS = 300
"""How much of a refused run's error the re-assembly's decision quotes."""


def message_id_for(model_run_id: str) -> str:
    """The id of the assistant message a model run writes (stable across retries)."""
    return str(uuid.uuid5(_MESSAGE_NAMESPACE, f"model-run-message:{model_run_id}"))


def _private(runtime_kind: RuntimeKind) -> bool:
    # A subagent's own words stay with it; the parent gets the promoted report instead.
    return runtime_kind is RuntimeKind.SUBAGENT_CHILD


MIN_CONTEXT_TOKENS = 512
"""What is left for the context however many tool definitions are offered (a provider then refuses a context
too long, and the turn re-assembles smaller, as for any other overflow)."""


def tool_definition_tokens(schemas: Sequence[Mapping[str, Any]], counter: Callable[[str], int]) -> int:
    """Tokens the offered tool definitions take on the wire (their canonical JSON, as a provider receives it)."""
    return counter(canonical_json(list(schemas))) if schemas else 0


def _smallest(*budgets: int | None, fallback: int | None = None) -> int | None:
    """The smallest budget given, else ``fallback`` (``None``: the policy's)."""
    given = [budget for budget in budgets if budget is not None]
    return min(given) if given else fallback


@dataclass
class _Route:
    """The provider route of a model call, once its participant is read (its metrics' label)."""

    name: str = "unknown"


def _step_result(ingested: Ingested) -> ToolStepResult:
    return ToolStepResult(tool_call_id=ingested.artifact.tool_call_id, status=ingested.artifact.status.value,
                          artifact_id=ingested.artifact.id, memory_id=ingested.memory.id)


@dataclass
class TurnActivities:
    """Activities bound to the worker's graph, tool registry and model providers."""

    deps: GraphDeps
    tools: ToolRegistry
    workspace: Path
    """The read-only data folder the workspace tools read."""
    providers: ProviderFactory
    """Model spec -> provider, configured by the composition root (the only place that knows the endpoints)."""
    agent_endpoints: Mapping[str, EndpointConfig] = field(default_factory=dict)
    """Agent name -> its own endpoint (base URL, key), over the installation's; built by the composition
    root from the agents file and the environment, so activities never read either."""
    skills: SkillLibrary = field(default_factory=SkillLibrary)
    """The skills folder's skills (:mod:`activities.skills`), read by the composition root at start."""
    windows: ContextWindows = field(default_factory=ContextWindows)
    """Model -> context window: the budget of a participant whose agent sets none follows its model's."""

    def _provider(self, spec: str, agent: object) -> tuple[ModelProvider, str]:
        """The provider for a participant's spec, over its agent's own endpoint when it has one."""
        override = self.agent_endpoints.get(agent) if isinstance(agent, str) else None
        for_spec = getattr(self.providers, "for_spec", None)
        if override is not None and for_spec is not None:
            return for_spec(spec, override)
        return self.providers(spec)

    # ------------------------------------------------------------------ model runs

    @activity.defn(name=ActivityName.START_MODEL_RUN)
    @sorted_failures
    async def start_model_run(self, request: ModelRunInput) -> str:
        """Record a model run (idempotent on its id); returns the id."""
        scope = request.scope
        async with self.deps.sessions() as session, session.begin():
            participant = await conversations.get_participant(session, scope.account_id, request.participant_id)
            run = await messages.start_model_run(
                session, scope.account_id, scope.conversation_id, scope.branch_id, request.participant_id,
                runtime_kind=request.runtime_kind, provider=participant.provider, model=participant.model,
                workflow_id=activity.info().workflow_id, parent_model_run_id=request.parent_model_run_id,
                model_run_id=request.model_run_id,
            )
        return run.id

    @activity.defn(name=ActivityName.ASSEMBLE_CONTEXT)
    @sorted_failures
    async def assemble_context(self, request: AssembleInput) -> AssembleResult:
        """Assemble and persist the context of one model run."""
        scope = request.scope
        extra: list[PolicyDecisionRecord] = []
        async with self.deps.sessions() as session:
            participant = await conversations.get_participant(session, scope.account_id, request.participant_id)
            config = await conversations.participant_config(session, scope.account_id, request.participant_id)
            catalog = await skill_catalog(session, scope.account_id, scope.branch_id, request.participant_id, config,
                                          self.skills)
            offered = await self._offered_to(session, scope.account_id, scope.branch_id, participant, config)
            if request.reassembly_of_model_run_id is not None:
                refused = await messages.get_model_run(session, scope.account_id, request.reassembly_of_model_run_id)
                refusal = (refused.error or "no error text")[:REFUSAL_CHARS]
                extra.append(PolicyDecisionRecord(
                    kind="budget",
                    subject_ref=f"model_run:{refused.id}",
                    outcome=DecisionOutcome.NOTED,
                    reason=(f"re-assembled within {request.token_budget} tokens: the provider refused the context "
                            f"of model run {refused.id} as too long ({refusal})"),
                    policy_version=self.deps.policy.version_tag,
                ))
            if request.checkpoint_id is not None:
                checkpoint = await checkpoints.get_checkpoint(session, scope.account_id, request.checkpoint_id)
                extra.append(PolicyDecisionRecord(
                    kind="restore",
                    subject_ref=f"checkpoint:{checkpoint.id}",
                    outcome=DecisionOutcome.PROTECTED,
                    reason=(f"{request.runtime_kind.value} restores from {checkpoint.kind} checkpoint with "
                            f"{len(checkpoint.references)} referenced record(s); raw transcript and child "
                            "workspaces are not re-read"),
                    policy_version=self.deps.policy.version_tag,
                ))
        # The tool definitions go with every call: they take their tokens from the budget, not beside it. A
        # re-assembly's budget already scales the refused context's, which was net of them.
        budget = _smallest(request.token_budget, conversations.token_budget(config),
                           fallback=self.windows.budget(participant.provider, participant.model))
        whole = self.deps.policy.default_token_budget if budget is None else budget
        tool_tokens = tool_definition_tokens(self.tools.schemas(offered), self.deps.counter)
        if request.reassembly_of_model_run_id is None:
            extra.append(PolicyDecisionRecord(
                kind="budget", subject_ref="tools:offered", outcome=DecisionOutcome.NOTED,
                reason=(f"{len(offered)} tool definition(s) offered with this call take {tool_tokens} of the "
                        f"{whole} tokens; the context is assembled within the rest"),
                policy_version=self.deps.policy.version_tag,
            ))
            whole = max(whole - tool_tokens, MIN_CONTEXT_TOKENS)
        boundary = GenerationBoundary(
            account_id=scope.account_id,
            conversation_id=scope.conversation_id,
            branch_id=scope.branch_id,
            participant_id=request.participant_id,
            runtime_kind=request.runtime_kind,
            # The route is the participant's provider; an unknown one fails closed in the policy.
            provider_route=participant.provider or "local",
            # An agent's own route and budget narrow the provider route and the policy's budget.
            route_limit=conversations.route_limit(config),
            token_budget=whole,
            now=request.now,
            model_run_id=request.model_run_id,
            skill_catalog=catalog,
        )
        assembled = await assemble_graph_context(
            self.deps, boundary, assembly_id=request.assembly_id, extra_decisions=tuple(extra),
        )
        record = assembled.result.record
        timings = assembled.timings
        if assembled.created:  # a retry that found the first attempt's assembly counts nothing again
            self.deps.metrics.record_assembly(
                boundary.provider_route, request.runtime_kind.value, record,
                (*assembled.result.decisions, *extra),
                {"graph_query": timings.graph_query_ms, "policy": timings.policy_ms,
                 "serialise": timings.serialise_ms},
            )
        return AssembleResult(assembly_id=assembled.assembly_id, legacy_tokens=record.legacy_tokens,
                              assembled_tokens=record.assembled_tokens)

    @activity.defn(name=ActivityName.CALL_MODEL)
    @sorted_failures
    async def call_model(self, request: CallModelInput) -> ModelStepResult:
        """Call the participant's model on the persisted assembly; record its answer or tool calls and usage.

        Counts the call once in ``dossier_model_calls_total``, by the attempt that ends it: answered, or
        failed for good (a retried attempt counts nothing there).

        Raises:
            ApplicationError: ``CONTEXT_TOO_LONG_ERROR`` (non-retryable, the budget to re-assemble
                within as its detail) when the provider refuses the context as too long.
        """
        route = _Route()
        try:
            result = await self._call_model(request, route)
        except Exception as error:
            if ends_activity(error):
                self.deps.metrics.record_model_call_end(route.name, answered=False)
            raise
        self.deps.metrics.record_model_call_end(route.name, answered=True)
        return result

    async def _call_model(self, request: CallModelInput, route: _Route) -> ModelStepResult:
        account = request.scope.account_id
        try:
            async with self.deps.sessions() as session:
                participant = await conversations.get_participant(session, account, request.participant_id)
                config = await conversations.participant_config(session, account, request.participant_id)
                stored = await get_context_assembly(session, account, request.assembly_id, with_messages=True)
                offered = await self._offered_to(session, account, request.scope.branch_id, participant, config)
            provider, model = self._provider(f"{participant.provider or 'scripted'}:{participant.model}",
                                             config.get("agent"))
            epoch = stored.record.epoch
            route.name = participant.provider or "scripted"
            started = time.perf_counter()
            try:
                response = await _heartbeating(provider.generate(ModelRequest(
                    run_id=request.model_run_id, model=model, participant_name=participant.name,
                    messages=tuple(ChatMessage.from_openai(message) for message in stored.messages or ()),
                    tools=tuple(self.tools.schemas(offered)),
                    cache_breakpoints=epoch.cache_breakpoints if epoch else (),
                    cache_ttl_seconds=epoch.cache_ttl_seconds if epoch else None,
                )))
            except Exception as error:
                self.deps.metrics.record_provider_error(route.name, time.perf_counter() - started, error)
                raise
            self.deps.metrics.record_model_call(
                route.name, time.perf_counter() - started, input_tokens=response.usage.input_tokens,
                cache_read_tokens=response.usage.cache_read_tokens, assembled_tokens=stored.record.assembled_tokens)
        except ContextTooLongError as error:
            await self._fail_run(account, request.model_run_id, error)
            raise _context_too_long(error, stored) from error
        except Exception as error:
            if not is_retryable(error):  # this run will not be retried: say so on its row
                await self._fail_run(account, request.model_run_id, error)
            raise

        # The provider's call ids are only unique within one response: namespace them by run.
        calls = tuple(
            ToolCallRequest(call_id=f"{request.model_run_id}:{call.call_id}", name=canonical_name(call.name),
                            arguments=dict(call.arguments))
            for call in response.tool_calls
        )
        message_id = await self._write_message(request, participant.name, response.text, calls)
        steps = [await self._plan_tool_call(request, call, offered) for call in calls]
        async with self.deps.sessions() as session, session.begin():
            await messages.finish_model_run(session, account, request.model_run_id, status="succeeded",
                                            message_id=message_id, usage=response.usage.to_json())
        return ModelStepResult(model_run_id=request.model_run_id, message_id=message_id, answered=not calls,
                               tools=tuple(steps))

    async def _offered(self, session: AsyncSession, account: str, call: ToolCallRecord) -> tuple[str, list[str]]:
        """The calling participant's name and the tools it was offered when it made ``call``."""
        participant = await conversations.get_participant(session, account, call.participant_id)
        config = await conversations.participant_config(session, account, call.participant_id)
        return participant.name, await self._offered_to(session, account, call.branch_id, participant, config, call)

    async def _offered_to(self, session: AsyncSession, account: str, branch_id: str, participant: ParticipantRecord,
                          config: dict[str, Any], before: ToolCallRecord | None = None) -> list[str]:
        """Its allow-list (else its provider's default), narrowed and widened by its skills (:mod:`policy.skills`)."""
        base = self.tools.offered(participant.provider, conversations.allowed_tools(config),
                                  conversations.mcp_servers(config))
        return await offered_tools(session, account, branch_id, participant.id, base=base, config=config,
                                   tools=self.tools,
                                   library=self.skills, before=before)

    async def _plan_tool_call(self, request: CallModelInput, call: ToolCallRequest,
                              offered: list[str]) -> ToolStepInput:
        """Record one tool call the model made, and say how the workflow must run it."""
        scope = request.scope
        try:
            tool = self.tools.get(call.name) if call.name in offered else None
        except UnknownToolError:
            tool = None
        # An unknown or not offered tool is recorded anyway: execute_tool captures that as its failed result.
        recorded = await begin_tool_call(
            self.deps, scope.account_id, scope.conversation_id, NewToolCall(
                branch_id=scope.branch_id, participant_id=request.participant_id, call_id=call.call_id, name=call.name,
                arguments=call.arguments, runtime_kind=request.runtime_kind, model_run_id=request.model_run_id),
        )
        if tool is not None and tool.deferred:
            await defer_tool_call(self.deps, scope.account_id, recorded.id, _waiting_text(call.arguments))
        return ToolStepInput(
            tool_call_id=recorded.id,
            deferred=bool(tool and tool.deferred),
            max_attempts=tool.max_attempts if tool else 1,
            timeout_seconds=tool.timeout_seconds if tool else 30.0,
            heartbeat_seconds=tool.heartbeat_seconds if tool else None,
        )

    async def _write_message(self, request: CallModelInput, name: str, text: str,
                             calls: tuple[ToolCallRequest, ...]) -> str:
        scope = request.scope
        message_id = message_id_for(request.model_run_id)
        private = _private(request.runtime_kind)
        await self._append_once(
            scope.account_id, message_id, conversation_id=scope.conversation_id, branch_id=scope.branch_id,
            role=MessageRole.ASSISTANT, content=text, author_participant_id=request.participant_id,
            speaker_label=name, model_run_id=request.model_run_id, tool_calls=calls,
            visibility=VisibilityScope.PARTICIPANT_PRIVATE if private else VisibilityScope.BRANCH,
        )
        return message_id

    async def _append_once(self, account: str, message_id: str, *, conversation_id: str, branch_id: str,
                           **fields: Any) -> None:
        """Append a message under an id derived from the run, unless an earlier attempt did."""
        try:
            async with self.deps.sessions() as session, session.begin():
                if await _message_exists(session, account, message_id):
                    activity.logger.info("message %s was written by an earlier attempt", message_id)
                    return
                await messages.append_message(session, account, conversation_id, NewMessage(
                    branch_id=branch_id, message_id=message_id, **fields))
        except IntegrityViolation:
            # Another attempt of this activity inserted it between our check and our insert.
            async with self.deps.sessions() as session:
                if not await _message_exists(session, account, message_id):
                    raise
            activity.logger.info("message %s was written by a concurrent attempt", message_id)

    async def _fail_run(self, account: str, model_run_id: str, error: Exception) -> None:
        try:
            async with self.deps.sessions() as session, session.begin():
                await messages.finish_model_run(session, account, model_run_id, status="failed",
                                                error=f"{type(error).__name__}: {error}")
        except StoreError as store_error:
            # The model call's own error is what the workflow must see; a run row that cannot be
            # marked (it was never written, or the database is away) must not replace it.
            activity.logger.warning("could not mark model run %s failed: %s: %s", model_run_id,
                                    type(store_error).__name__, store_error)

    # ------------------------------------------------------------------ tools

    @activity.defn(name=ActivityName.EXECUTE_TOOL)
    @sorted_failures
    async def execute_tool(self, request: ToolCallInput) -> ToolStepResult:
        """Run one tool call and capture its result before anything else (once per call).

        A transient failure records the attempt (its error text, in the call's
        history) and raises for Temporal to retry under the tool's policy; bad
        arguments or an unknown tool are captured as a failed result at once.
        """
        account = request.account_id
        earlier = await ingested_result(self.deps, account, request.tool_call_id)
        if earlier is not None:
            # An earlier attempt captured the result and then lost its worker: running the tool
            # again could repeat its side effects.
            activity.logger.info("tool call %s was captured by an earlier attempt", request.tool_call_id)
            return _step_result(earlier)
        async with self.deps.sessions() as session:
            call = await tool_store.get_tool_call(session, account, request.tool_call_id)
            name, offered = await self._offered(session, account, call)
        info = activity.info()
        if call.name in self.tools and call.name not in offered:
            # The model was not offered it (its agent's allow-list, or a drill a real model was not
            # given): refused like an unknown tool, never run.
            return await self._capture_failure(
                account, call.id, f"UnknownToolError: tool {call.name!r} is not offered to {name}; "
                f"offered: {', '.join(offered) or 'none'}", info.attempt)
        context = ToolContext(
            account_id=account, tool_call_id=call.id, attempt=info.attempt,
            workspace=self.workspace, artifacts=self.deps.artifacts, heartbeat=activity.heartbeat,
            privacy=call.privacy, graph=self.deps, skills=self.skills,
            record_object=object_recorder(self.deps, account, call.id),
        )
        try:
            result = await self.tools.execute(call.name, context, dict(call.arguments))
        except ToolError as error:
            if not error.retryable:  # bad arguments, unknown or deferred tool: another attempt cannot help
                return await self._capture_failure(account, call.id, f"{type(error).__name__}: {error}",
                                                   info.attempt)
            await record_attempt_failure(self.deps, account, call.id, attempt=info.attempt,
                                         error=f"{type(error).__name__}: {error}", final=False)
            # Raised as retryable: the workflow's retry policy is the tool's (max_attempts).
            raise ApplicationError(f"{call.name} attempt {info.attempt} failed: {error}",
                                   type="ToolExecutionError") from error
        return _step_result(await ingest_tool_result(
            self.deps, account, call.id,
            ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=result.payload, content_type=result.content_type,
                        attempts=info.attempt),
            # A result stricter than its call (recall's bytes of another record) keeps its own protection.
            privacy=result.privacy,
            visibility=VisibilityScope.PARTICIPANT_PRIVATE if result.private else None,
            objects=result.objects,
        ))

    @activity.defn(name=ActivityName.FINALIZE_TOOL_FAILURE)
    @sorted_failures
    async def finalize_tool_failure(self, request: ToolCallInput) -> ToolStepResult:
        """After the last attempt failed: capture the last error as the call's failed result."""
        async with self.deps.sessions() as session:
            call = await tool_store.get_tool_call(session, request.account_id, request.tool_call_id)
        error = call.last_error or "the tool failed without an error text"
        return await self._capture_failure(request.account_id, call.id, error, max(call.attempts, 1))

    @activity.defn(name=ActivityName.CONFIRM_ANSWER)
    @sorted_failures
    async def confirm_answer(self, request: ToolCallInput) -> None:
        """The answer a turn was signalled about is in the graph (the client commits it after the signal lands).

        Raises a retryable error while the call is still deferred: the answering
        client's transaction has not committed yet (the workflow retries for a
        while, then waits for another answer: a client that died between signal
        and commit left nothing behind).
        """
        async with self.deps.sessions() as session:
            call = await tool_store.get_tool_call(session, request.account_id, request.tool_call_id)
        if call.status is ToolCallStatus.DEFERRED:
            raise ApplicationError(f"the answer to tool call {call.id} is not committed yet",
                                   type="AnswerNotCommitted")

    async def _capture_failure(self, account: str, tool_call_id: str, error: str, attempts: int) -> ToolStepResult:
        # A call that failed for good stays retry-critical: the model sees its error verbatim until it
        # is resolved, instead of a summary that hides what to fix.
        return _step_result(await ingest_tool_result(
            self.deps, account, tool_call_id,
            ToolOutcome(status=ToolCallStatus.FAILED, result=error.encode(), content_type="text/plain",
                        attempts=attempts),
            retry_critical=True,
        ))

    # ------------------------------------------------------------------ subagents, checkpoints, jobs

    @activity.defn(name=ActivityName.PROMOTE_CHILD)
    @sorted_failures
    async def promote_child(self, request: PromoteInput) -> PromoteResult:
        """Make a finished child's report, file handles and failures visible to its parent."""
        scope = request.scope
        report = None
        if request.child_message_id is not None:
            async with self.deps.sessions() as session:
                report = (await messages.get_message(session, scope.account_id, request.child_message_id)).content
        promoted = await promote_child_results(
            self.deps, scope.account_id, scope.conversation_id, scope.branch_id,
            child_participant_id=request.child_participant_id, parent_participant_id=request.parent_participant_id,
            tool_call_ids=await promotable_calls(self.deps, scope.account_id, request.tool_call_ids),
            report=report, outcome=request.outcome,
        )
        return PromoteResult(memory_ids=tuple(memory.id for memory in promoted))

    @activity.defn(name=ActivityName.WRITE_CHECKPOINT)
    @sorted_failures
    async def write_checkpoint(self, request: CheckpointInput) -> str:
        """Write a deterministic ContinuationCheckpoint; returns its id (stable across retries)."""
        scope = request.scope
        state: dict[str, Any] = {"next_step": request.next_step}
        references: list[str] = []
        if request.children:
            state["children"] = [
                {"participant": child.participant_id, "status": child.status, "workflow_id": child.workflow_id}
                for child in request.children
            ]
            references = [memory_id for child in request.children for memory_id in child.promoted_memory_ids]
        if request.model_run_ids:
            state["model_runs"] = len(request.model_run_ids)
            references += list(request.model_run_ids[-3:])
        checkpoint_id = str(uuid.uuid5(_MESSAGE_NAMESPACE, f"checkpoint:{activity.info().workflow_run_id}:"
                                                           f"{request.kind}:{len(request.model_run_ids)}"))
        async with self.deps.sessions() as session, session.begin():
            record = await checkpoints.put_checkpoint(
                session, scope.account_id, scope.conversation_id, scope.branch_id, request.participant_id,
                request.kind, state=state, references=references, checkpoint_id=checkpoint_id,
                model_run_id=request.model_run_ids[-1] if request.model_run_ids else None,
            )
        return record.id

    @activity.defn(name=ActivityName.WRITE_SCHEDULED_PROMPT)
    @sorted_failures
    async def write_scheduled_prompt(self, request: ScheduledPromptInput) -> str:
        """Write the user message that opens one scheduled run (idempotent per run)."""
        scope = request.scope
        message_id = str(uuid.uuid5(_MESSAGE_NAMESPACE, f"scheduled:{activity.info().workflow_run_id}"))
        when = request.fired_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        await self._append_once(
            scope.account_id, message_id, conversation_id=scope.conversation_id, branch_id=scope.branch_id,
            role=MessageRole.USER, content=f"Scheduled run {when} ({request.job_name}): {request.prompt}",
            speaker_label="Scheduler",
        )
        return message_id

    def all(self) -> list[Callable[..., Any]]:
        """Every activity, for ``Worker(activities=...)``."""
        return [
            self.start_model_run, self.assemble_context, self.call_model, self.execute_tool,
            self.finalize_tool_failure, self.confirm_answer, self.promote_child, self.write_checkpoint,
            self.write_scheduled_prompt,
        ]


async def _heartbeating(call: Awaitable[Any]) -> Any:
    """Await a provider call, heartbeating meanwhile so a worker that died mid-call is noticed early."""
    return await heartbeating(call, HEARTBEAT_SECONDS)


def _context_too_long(error: ContextTooLongError, stored: StoredContextAssembly) -> ApplicationError:
    """The failure the turn workflow re-assembles on: non-retryable, with the smaller budget as its detail."""
    record = stored.record
    budget = reduced_budget(record.assembled_tokens, record.token_budget, error.limit_tokens, error.prompt_tokens)
    activity.logger.warning("the provider refused a %d-token context as too long; the budget to re-assemble "
                            "within is %d", record.assembled_tokens, budget)
    return ApplicationError(f"{type(error).__name__}: {error}", budget, type=CONTEXT_TOO_LONG_ERROR,
                            non_retryable=True)


async def _message_exists(session: AsyncSession, account: str, message_id: str) -> bool:
    try:
        await messages.get_message(session, account, message_id)
    except NotFoundError:
        return False
    return True


def _waiting_text(arguments: dict[str, Any]) -> str:
    prompt = arguments.get("prompt")
    return f"the user to answer: {prompt}" if isinstance(prompt, str) and prompt else "the user's answer"


__all__ = ["TurnActivities", "message_id_for"]
