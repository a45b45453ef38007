"""The Python client: start agent work, answer deferred tools, manage schedules, list runs.

The CLI commands are thin wrappers over :class:`DossierClient`. The client
writes what the human says (messages, answers) into the graph itself and
starts workflows with ids only; a worker (``python worker.py``) must be
polling the task queue for anything to run.

Every method checks its input before it writes anything: text must be
non-blank UTF-8 without NUL and within ``MESSAGE_MAX_BYTES``, ids must be
UUIDs, a fork point must be on the branch's lineage, a deferred answer must be
what its tool expects. A refusal is an :class:`InvalidInputError` and leaves
the graph as it was.

    async with DossierClient.connect(Settings()) as dossier:
        outcome = await dossier.chat("Summarise Q3 revenue by region")
        print(outcome.answer)
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import async_sessionmaker
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.service import RPCError, RPCStatusCode

from activities.ingest import ToolOutcome, ingest_tool_result
from activities.deps import GraphDeps
from contracts import (
    ANSWER_TOOL_SIGNAL,
    STATUS_QUERY,
    AnswerToolInput,
    DiscussionInput,
    DiscussionResult,
    MultiModelInput,
    MultiModelResult,
    Scope,
    SubagentBatchInput,
    SubagentBatchResult,
    SubagentChildInput,
    TurnInput,
    TurnResult,
    TurnStatus,
    WorkflowName,
)
from activities.providers.base import ProviderError, ProviderFactory, parse_model_spec
from activities.tools.runtime import REMEMBER
from dossier.agents import AgentDefinition, AgentsFile, agents_for
from dossier.runtime import agent_endpoints, agent_tools, check_agent_skills, model_providers, open_graph, temporal_client
from dossier.services import ensure_services, services_status
from dossier.services import inspector as inspector_service
from dossier.settings import Settings
from policy.enums import MessageRole, RuntimeKind, ToolCallStatus, VisibilityScope
from policy.records import ToolCallRecord
from store import branches, conversations, messages, user_memories
from store import tools as tool_store
from store.errors import InvalidForkPointError, NotFoundError
from store.models import ToolCall
from store.writes import NewMessage
from workflows.visibility import INSPECTOR_MEMO, search_attributes, workflow_summary
from dossier.client.errors import AnswerRefusedError, ClientError, InvalidInputError, UnknownIdError
from dossier.client.inputs import check_id, check_record_ref, check_text
from dossier.client.memories import Memories
from dossier.client.records import USAGE_KEYS, RunRow, TurnOutcome, run_usage
from dossier.client.runs import Runs
from dossier.client.schedules import Schedules

Progress = Callable[[str], None]
"""Called with a one-line progress report while a long wait goes on."""

ACCOUNT_FILE = "account-id"
"""Under ``DOSSIER_HOME``: the local account this installation works in."""


@dataclass
class DossierClient:
    """Operations on conversations and agent runs for one account."""

    deps: GraphDeps
    temporal: Client
    settings: Settings
    account_id: str
    ui_base: str | None = None
    poll_seconds: float = 1.0
    providers: ProviderFactory | None = None
    """Model spec -> provider, to check a spec before anything is written (default: from ``settings``)."""
    agents: AgentsFile | None = None
    """The agents a name may stand for where a model spec is taken (default: the settings' agents file)."""
    _progress_shown: set[str] = field(default_factory=set)
    memories: Memories = field(init=False)
    """The account's user memories (``dossier memory``)."""
    runs: Runs = field(init=False)
    """Model runs, and explain, why-not, what-if and diff over their assemblies."""
    schedules: Schedules = field(init=False)
    """Recurring jobs."""

    def __post_init__(self) -> None:
        self.memories = Memories(self.deps, self.account_id, self.settings.message_max_bytes)
        self.runs = Runs(self.deps, self.account_id, self.ui_url)
        self.schedules = Schedules(self)
        # The inspector the run summaries link to: resolved once, here, so every client links the same way.
        self.settings = with_running_inspector(self.settings)
        if self.providers is None:
            self.providers = model_providers(self.settings)
        if self.agents is None:
            self.agents = agents_for(self.settings.dossier_agents_file)

    def agent(self, spec: str) -> AgentDefinition | None:
        """The agent ``spec`` names: a name without ``:`` that the agents file defines (else ``None``).

        Raises:
            ClientError: a name without ``:`` that is not a defined agent either.
        """
        if ":" in spec:
            return None
        found = self.agents.get(spec) if self.agents is not None else None
        if found is None:
            known = ", ".join(sorted(self.agents.agents)) if self.agents is not None else ""
            raise ClientError(f"{spec!r} is neither a model spec ('<provider>:<model>', e.g. 'scripted:analyst') "
                              f"nor an agent of {self.agents.path if self.agents else 'the agents file'}"
                              f"{' (agents: ' + known + ')' if known else ''}")
        return found

    def model_spec(self, spec: str) -> str:
        """The model spec behind a model spec or an agent name."""
        found = self.agent(spec)
        return found.model if found is not None else spec

    @classmethod
    @asynccontextmanager
    async def connect(cls, settings: Settings, *, account_id: str | None = None) -> AsyncIterator[DossierClient]:
        """Connect to Postgres, S3 and Temporal (starting the embedded ones as needed)."""
        endpoints = await asyncio.to_thread(ensure_services, settings, ("postgres", "s3", "temporal"))
        settings = await asyncio.to_thread(with_running_llm, settings)
        # The worker's registry (built-in tools and the agents' tool modules): its catalog is what capture reads.
        agents, tools = agent_tools(settings)
        # The worker refuses an agent naming a skill the folder lacks; so does the client, before anything is
        # written (a worker started earlier under another configuration would run the agent without it).
        check_agent_skills(settings, agents)
        async with open_graph(settings, tools=tools) as deps:
            client = await temporal_client(settings)
            account = account_id or await _local_account(deps, settings)
            yield cls(deps=deps, temporal=client, settings=settings, account_id=account,
                      ui_base=endpoints.temporal_ui_url, agents=agents)

    # ------------------------------------------------------------------ links

    def _visibility(self, scope: Scope, runtime_kind: RuntimeKind | None, participant_id: str | None, what: str,
                    *counts: str) -> dict[str, Any]:
        """Search attributes, static summary and memo of a workflow start (see :mod:`workflows.visibility`)."""
        inspector = self.settings.inspector_base_url()
        return {
            "search_attributes": search_attributes(scope, runtime_kind, participant_id),
            "static_summary": workflow_summary(what, scope, runtime_kind, inspector, *counts),
            "memo": {INSPECTOR_MEMO: inspector},
        }

    def ui_url(self, workflow_id: str) -> str | None:
        """The run's page in the Temporal UI."""
        if self.ui_base is None:
            return None
        return f"{self.ui_base}/namespaces/{self.settings.temporal_namespace}/workflows/{workflow_id}"

    def check_text(self, text: str, what: str = "message") -> str:
        """:func:`check_text` under this client's ``message_max_bytes``."""
        return check_text(text, what, max_bytes=self.settings.message_max_bytes)

    def _check_tools(self, tools: Sequence[str] | None) -> None:
        """Refuse an allow-list naming a tool the runtime does not have (before anything is written).

        Raises:
            ClientError: a name that is no registered tool (built-in or of the agents' tool modules).
        """
        known = {tool.name for tool in self.deps.catalog.tools}
        unknown = sorted(set(tools or ()) - known)
        if unknown:
            raise ClientError(f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")

    def _check_models(self, *specs: str) -> None:
        """Refuse a model spec no configured provider serves, before anything is written.

        Raises:
            ClientError: a malformed spec, an unknown provider or script, an unconfigured endpoint.
        """
        assert self.providers is not None  # set by __post_init__
        for spec in specs:
            agent = self.agent(spec)
            override = agent_endpoints(self.agents).get(spec) if agent is not None and self.agents else None
            for_spec = getattr(self.providers, "for_spec", None)
            try:
                if override is not None and for_spec is not None:
                    for_spec(agent.model, override)  # the endpoint the worker will call for this agent
                else:
                    self.providers(self.model_spec(spec))
            except ProviderError as error:
                raise ClientError(str(error)) from error

    # ------------------------------------------------------------------ graph helpers

    async def new_conversation(self, title: str = "") -> tuple[str, str]:
        """A new conversation; returns (conversation id, root branch id).

        Raises:
            InvalidInputError: a title with a NUL, undecodable or over ``MESSAGE_MAX_BYTES`` (it may be empty).
        """
        if title.strip():
            self.check_text(title, "title")
        async with self.deps.sessions() as session, session.begin():
            conversation = await conversations.create_conversation(session, self.account_id, title=title)
        return conversation.id, conversation.root_branch_id

    async def _scope(self, conversation_id: str | None, branch_id: str | None, title: str) -> Scope:
        conversation_id = check_id(conversation_id, "conversation")
        branch_id = check_id(branch_id, "branch")
        if conversation_id is None:
            if branch_id is not None:
                raise ClientError("--branch needs --conversation")
            conversation_id, branch_id = await self.new_conversation(title[:80])
        try:
            async with self.deps.sessions() as session:
                conversation = await conversations.get_conversation(session, self.account_id, conversation_id)
                if branch_id is not None:
                    branch = await branches.get_branch(session, self.account_id, branch_id)
                    if branch.conversation_id != conversation.id:
                        raise ClientError(f"branch {branch_id} is not in conversation {conversation_id}")
        except NotFoundError as error:
            raise ClientError(str(error)) from error
        return Scope(account_id=self.account_id, conversation_id=conversation.id,
                     branch_id=branch_id or conversation.root_branch_id)

    async def participant(self, scope: Scope, spec: str, *, name: str | None = None, role: str = "assistant",
                          parent_participant_id: str | None = None, system_prompt: str = "",
                          tools: Sequence[str] | None = None) -> str:
        """The conversation's participant for a model spec (or an agent's name) and name, created on first use.

        An agent's participant gets the agent's model, system prompt (unless one is given) and a
        ``config`` holding the rest of its definition (``agent``, the ``tools`` allow-list, ``route``,
        ``token_budget``, ``endpoint``...); its default display name is the agent's name.

        Args:
            tools: the tools it is offered (canonical names, kept in its ``config["tools"]``, over an
                agent's own list); default: the agent's list, else every tool for a scripted model and
                every tool but the ``diag.*`` drills for a real one.
            system_prompt: its instructions (default: the agent's, else a one-line persona).

        Raises:
            ClientError: a spec no provider serves, a name that is no agent, or an unknown tool name
                (checked here, before any workflow starts).
        """
        self._check_models(spec)
        self._check_tools(tools)
        agent = self.agent(spec)
        provider, model = parse_model_spec(agent.model if agent is not None else spec)
        name = name or default_name(spec)
        if agent is not None and not system_prompt:
            system_prompt = agent.system_prompt
        config = agent.participant_config() if agent is not None else {}
        if tools is not None:
            config["tools"] = list(tools)
        async with self.deps.sessions() as session, session.begin():
            for existing in await conversations.list_participants(session, self.account_id, scope.conversation_id):
                if (existing.provider, existing.model, existing.name) == (provider, model, name):
                    return existing.id
            created = await conversations.add_participant(
                session, self.account_id, scope.conversation_id, name=name, role=role, provider=provider,
                model=model, system_prompt=system_prompt or f"You are {name}. Use your tools; cite result ids.",
                parent_participant_id=parent_participant_id, config=config,
            )
        return created.id

    async def say(self, scope: Scope, text: str, *, speaker_label: str | None = None, directive: bool = False,
                  private_to: str | None = None) -> str:
        """Write a user (or moderator) message; returns its id.

        Raises:
            InvalidInputError: text refused by :func:`check_text`; nothing is written.
        """
        self.check_text(text)
        async with self.deps.sessions() as session, session.begin():
            message = await messages.append_message(
                session, self.account_id, scope.conversation_id, NewMessage(
                    branch_id=scope.branch_id, role=MessageRole.USER, content=text, speaker_label=speaker_label,
                    is_directive=directive,
                    visibility=VisibilityScope.PARTICIPANT_PRIVATE if private_to else VisibilityScope.BRANCH,
                    shared_with=[private_to] if private_to else []),
            )
        return message.id

    async def message_text(self, message_id: str | None) -> str | None:
        """A message's content."""
        if message_id is None:
            return None
        async with self.deps.sessions() as session:
            return (await messages.get_message(session, self.account_id, message_id)).content

    # ------------------------------------------------------------------ turns

    async def chat(self, text: str, *, conversation_id: str | None = None, branch_id: str | None = None,
                   model: str = "scripted:analyst", name: str | None = None, wait: bool = True,
                   runtime_kind: RuntimeKind = RuntimeKind.CHAT, progress: Progress | None = None,
                   tools: Sequence[str] | None = None, system_prompt: str = "") -> TurnOutcome:
        """Say ``text`` and run one agent turn on it.

        ``tools`` and ``system_prompt`` apply when the participant is created (see :meth:`participant`).

        Raises:
            InvalidInputError: bad text or ids, before anything is written.
            ClientError: an unknown conversation or branch, a model spec no provider serves.
        """
        self.check_text(text)
        self._check_models(model)
        self._check_tools(tools)
        scope = await self._scope(conversation_id, branch_id, text)
        participant_id = await self.participant(scope, model, name=name, tools=tools, system_prompt=system_prompt)
        message_id = await self.say(scope, text)
        workflow_id = f"turn-{message_id}"
        handle = await self.temporal.start_workflow(
            WorkflowName.AGENT_TURN, TurnInput(scope=scope, participant_id=participant_id, runtime_kind=runtime_kind,
                                               model_timeout_seconds=self.settings.model_timeout_seconds),
            id=workflow_id, task_queue=self.settings.temporal_task_queue, result_type=TurnResult,
            **self._visibility(scope, runtime_kind, participant_id, "agent turn"),
        )
        outcome = TurnOutcome(scope.conversation_id, scope.branch_id, participant_id, name or default_name(model),
                              workflow_id, self.ui_url(workflow_id))
        if not wait:
            return outcome
        result = await self._wait(handle, progress)
        return TurnOutcome(**{**outcome.__dict__, "result": result, "answer": await self.message_text(result.message_id)})

    async def fork(self, conversation_id: str, at_message_id: str, *, branch_id: str | None = None,
                   name: str | None = None) -> str:
        """Fork a branch at a message; returns the new branch id.

        Raises:
            InvalidInputError: a malformed id or name, or a message that is not on the lineage of the
                branch forked from (a sibling branch's, say); nothing is written.
            ClientError: an unknown conversation, branch or message.
        """
        at_message_id = check_id(at_message_id, "message")
        if name is not None:
            self.check_text(name, "branch name")
        scope = await self._scope(conversation_id, branch_id, "")
        try:
            async with self.deps.sessions() as session, session.begin():
                branch = await branches.fork_branch(session, self.account_id, scope.conversation_id,
                                                    scope.branch_id, at_message_id,
                                                    name=name or f"fork at {at_message_id[:8]}")
        except InvalidForkPointError as error:
            raise InvalidInputError(f"{error}; fork from that message's own branch (--branch)") from error
        except NotFoundError as error:
            raise ClientError(str(error)) from error
        return branch.id

    async def send_on_branch(self, text: str, *, conversation_id: str, branch_id: str,
                             model: str = "scripted:analyst", name: str | None = None,
                             progress: Progress | None = None, wait: bool = True) -> TurnOutcome:
        """A turn on a forked branch (runtime kind ``branch_send``), by the conversation's participant ``name``."""
        return await self.chat(text, conversation_id=conversation_id, branch_id=branch_id, model=model, name=name,
                               runtime_kind=RuntimeKind.BRANCH_SEND, progress=progress, wait=wait)

    async def multi(self, text: str, models: Sequence[str], *, conversation_id: str | None = None,
                    branch_id: str | None = None, progress: Progress | None = None) -> list[TurnOutcome]:
        """Several models answer the same message, each with its own tool state."""
        self.check_text(text)
        if not models:
            raise InvalidInputError("give at least one model")
        self._check_models(*models)
        scope = await self._scope(conversation_id, branch_id, text)
        names = _unique_names(models)
        participants = [await self.participant(scope, spec, name=name) for spec, name in zip(models, names)]
        message_id = await self.say(scope, text)
        workflow_id = f"multi-{message_id}"
        handle = await self.temporal.start_workflow(
            WorkflowName.MULTI_MODEL_TURN,
            MultiModelInput(scope=scope, participant_ids=tuple(participants),
                            model_timeout_seconds=self.settings.model_timeout_seconds),
            id=workflow_id, task_queue=self.settings.temporal_task_queue, result_type=MultiModelResult,
            **self._visibility(scope, RuntimeKind.MULTI_MODEL, None, "multi-model turn",
                               f"{len(participants)} participants"),
        )
        result = await self._wait(handle, progress)
        return [
            TurnOutcome(scope.conversation_id, scope.branch_id, turn.participant_id, name, workflow_id,
                        self.ui_url(workflow_id), turn, await self.message_text(turn.message_id))
            for turn, name in zip(result.results, names)
        ]

    async def subagents(self, text: str, children: Sequence[tuple[str, str]], *, parent_model: str = "scripted:coordinator",
                        conversation_id: str | None = None, branch_id: str | None = None,
                        child_timeout_seconds: float = 600.0, progress: Progress | None = None
                        ) -> tuple[SubagentBatchResult, str, TurnOutcome | None]:
        """The parent delegates ``children`` (model spec, task) and resumes from their promoted results.

        Returns:
            (batch result, workflow id, the parent's resumed turn).
        """
        self.check_text(text)
        if not children:
            raise InvalidInputError("give at least one subagent task")
        for _, task in children:
            self.check_text(task, "subagent task")
        if not child_timeout_seconds > 0:
            raise InvalidInputError(f"the child timeout must be positive, got {child_timeout_seconds}")
        self._check_models(parent_model, *(spec for spec, _ in children))
        scope = await self._scope(conversation_id, branch_id, text)
        parent = await self.participant(scope, parent_model)
        message_id = await self.say(scope, text)
        tasks = []
        for index, (spec, task) in enumerate(children):
            model = parse_model_spec(spec)[1] if ":" in spec else spec  # an agent's children are named after it
            child = await self.participant(scope, spec, name=f"{model}-{index + 1}", role="subagent",
                                           parent_participant_id=parent)
            # The task is the child's alone: the parent gets the promoted result, not the child's thread.
            await self.say(scope, task, private_to=child)
            tasks.append(SubagentChildInput(participant_id=child, timeout_seconds=child_timeout_seconds))
        workflow_id = f"subagents-{message_id}"
        handle = await self.temporal.start_workflow(
            WorkflowName.SUBAGENT_BATCH,
            SubagentBatchInput(scope=scope, parent_participant_id=parent, children=tuple(tasks),
                               model_timeout_seconds=self.settings.model_timeout_seconds),
            id=workflow_id, task_queue=self.settings.temporal_task_queue, result_type=SubagentBatchResult,
            **self._visibility(scope, None, parent, "subagent batch", f"{len(tasks)} subagents"),
        )
        result = await self._wait(handle, progress)
        resume = None
        if result.resume is not None:
            resume = TurnOutcome(scope.conversation_id, scope.branch_id, parent, default_name(parent_model),
                                 f"{workflow_id}/resume",
                                 self.ui_url(f"{workflow_id}/resume"), result.resume,
                                 await self.message_text(result.resume.message_id))
        return result, workflow_id, resume

    async def discuss(self, topic: str, models: Sequence[str], *, rounds: int = 2, directive: str | None = None,
                      conversation_id: str | None = None, branch_id: str | None = None,
                      progress: Progress | None = None) -> tuple[list[TurnOutcome], str]:
        """Participants take turns on ``topic`` under a moderator directive."""
        self.check_text(topic, "topic")
        if directive is not None:
            self.check_text(directive, "directive")
        if rounds < 1:
            raise InvalidInputError(f"--rounds must be at least 1, got {rounds}")
        if not models:
            raise InvalidInputError("give at least one model")
        self._check_models(*models)
        scope = await self._scope(conversation_id, branch_id, topic)
        names = _unique_names(models)
        participants = [await self.participant(scope, spec, name=name) for spec, name in zip(models, names)]
        first = await self.say(scope, topic, speaker_label="Panel question")
        if directive:
            await self.say(scope, directive, speaker_label="Moderator", directive=True)
        workflow_id = f"discussion-{first}"
        handle = await self.temporal.start_workflow(
            WorkflowName.DISCUSSION,
            DiscussionInput(scope=scope, participant_ids=tuple(participants), rounds=rounds,
                            model_timeout_seconds=self.settings.model_timeout_seconds),
            id=workflow_id, task_queue=self.settings.temporal_task_queue, result_type=DiscussionResult,
            **self._visibility(scope, RuntimeKind.DISCUSSION, None, "discussion", f"{rounds} rounds",
                               f"{len(participants)} participants"),
        )
        result = await self._wait(handle, progress)
        by_id = dict(zip(participants, names))
        turns = [
            TurnOutcome(scope.conversation_id, scope.branch_id, turn.participant_id, by_id[turn.participant_id],
                        workflow_id, self.ui_url(workflow_id), turn, await self.message_text(turn.message_id))
            for turn in result.turns
        ]
        return turns, workflow_id

    async def answer(self, tool_call_id: str, answer: str, *, content_type: str | None = None) -> str:
        """Answer a deferred tool call: capture the answer as its result and signal its turn, as one step.

        The answer is checked first (text, and JSON when the tool's results
        or ``content_type`` are JSON) and the turn must still be running.
        Then capture and signal share one Postgres transaction: the call's
        row is locked, the answer is captured in it, the turn is signalled,
        and only then is it committed. A signal that fails (the turn ended
        meanwhile) rolls the capture back, so the call is never marked
        answered for a turn that cannot read it. The turn, once signalled,
        reads on only when the answer is committed (its ``confirm_answer``
        step retries for about a minute, then waits for another answer), so
        it never runs ahead of the commit. A payload over the inline limit may
        leave its content-addressed S3 object behind, which no row refers to.

        Args:
            content_type: its MIME type; by default JSON for a tool whose results are JSON
                (``user.pick_file``), else JSON when the answer parses as JSON and plain text otherwise.

        Returns:
            The id of the workflow that was signalled.

        Raises:
            InvalidInputError: a malformed id, bad text, or an answer that is not the JSON the tool expects.
            ClientError: an unknown call, a call that is not deferred or has no workflow.
            AnswerRefusedError: the call's turn has ended; nothing was captured.
        """
        tool_call_id = check_id(tool_call_id, "tool call")
        self.check_text(answer, "answer")
        call, workflow_id = await self._waiting_call(tool_call_id)
        if call.name == REMEMBER:  # only a confirmation writes the memory: never a bare answer
            return await self._answer_memory(call, workflow_id, confirmed=_confirmation(answer))
        wants_json = self.deps.catalog.spec(call.name).result_kind == "json"
        if content_type is None:
            content_type = "application/json" if wants_json or _parses_as_json(answer) else "text/plain; charset=utf-8"
        if (wants_json or _is_json(content_type)) and not _parses_as_json(answer):
            raise InvalidInputError(f"{call.name} expects a JSON answer such as '{{\"path\": \"a.csv\"}}', got "
                                    f"{answer[:40]!r}{'...' if len(answer) > 40 else ''}")
        handle = self.temporal.get_workflow_handle(workflow_id)
        await self._check_running(handle, tool_call_id)
        await self._capture_and_signal(handle, call.id, answer.encode(), content_type)
        return workflow_id

    async def _waiting_call(self, tool_call_id: str) -> tuple[ToolCallRecord, str]:
        """A deferred call of this account and the workflow waiting for its answer.

        Raises:
            ClientError: an unknown call, one that is not deferred, or one with no workflow.
        """
        try:
            async with self.deps.sessions() as session:
                call = await tool_store.get_tool_call(session, self.account_id, tool_call_id)
                run = await messages.get_model_run(session, self.account_id, call.model_run_id) \
                    if call.model_run_id else None
        except NotFoundError as error:
            raise ClientError(str(error)) from error
        if call.status is not ToolCallStatus.DEFERRED:
            raise ClientError(f"tool call {tool_call_id} is {call.status.value}, not waiting for an answer")
        if run is None or run.workflow_id is None:
            raise ClientError(f"tool call {tool_call_id} has no workflow to resume")
        return call, run.workflow_id

    async def _check_running(self, handle: WorkflowHandle, tool_call_id: str) -> None:
        """Refuse an answer for a turn that has ended, before anything is captured."""
        try:
            status = (await handle.describe()).status
        except RPCError as error:
            if error.status is not RPCStatusCode.NOT_FOUND:
                raise
            status = None
        if status is not WorkflowExecutionStatus.RUNNING:
            state = status.name.lower() if status is not None else "gone"
            raise AnswerRefusedError(f"the turn {handle.id} waiting for tool call {tool_call_id} is {state}; "
                                     "nothing was captured and the call stays deferred")

    async def _capture_and_signal(self, handle: WorkflowHandle, tool_call_id: str, answer: bytes,
                                  content_type: str,
                                  also: Callable[[async_sessionmaker], Awaitable[Any]] | None = None) -> None:
        """Capture the answer and signal the turn in one transaction, committed only if the signal lands.

        ``also`` writes what the answer implies (a confirmed memory) in the same transaction.
        """
        engine = self.deps.sessions.kw["bind"]
        async with engine.connect() as connection:
            outer = await connection.begin()
            # Sessions on this connection join its transaction: their commits are savepoints.
            joined = async_sessionmaker(bind=connection, expire_on_commit=False,
                                        join_transaction_mode="create_savepoint")
            try:
                # Locked on the outer transaction until it ends (a savepoint's lock would go with
                # the savepoint): a second answer waits here, then finds the call settled.
                status = await connection.scalar(
                    select(ToolCall.status).where(ToolCall.account_id == self.account_id,
                                                  ToolCall.id == tool_call_id).with_for_update())
                if status != ToolCallStatus.DEFERRED.value:
                    raise ClientError(f"tool call {tool_call_id} was answered meanwhile")
                if also is not None:
                    await also(joined)
                await ingest_tool_result(
                    replace(self.deps, sessions=joined), self.account_id, tool_call_id,
                    ToolOutcome(status=ToolCallStatus.SUCCEEDED, result=answer, content_type=content_type),
                )
                try:
                    await handle.signal(ANSWER_TOOL_SIGNAL, AnswerToolInput(tool_call_id=tool_call_id))
                except RPCError as error:
                    raise AnswerRefusedError(f"the turn {handle.id} could not take the answer ({error.message}); "
                                             "nothing was captured and the call stays deferred") from error
            except BaseException:
                await outer.rollback()
                raise
            await outer.commit()

    # ------------------------------------------------------------------ user memories

    async def answer_memory(self, tool_call_id: str, *, confirmed: bool) -> str:
        """Confirm or reject a memory a model proposed with ``remember`` (a deferred call), and resume its turn.

        A confirmation writes the user memory (its id derives from the call, so it is written once) in the
        same transaction that captures the answer; a rejection writes none. Either way the model reads the
        answer as the call's result.

        Args:
            tool_call_id: the deferred ``remember`` call.
            confirmed: whether the user wants it remembered.

        Returns:
            The id of the workflow that was signalled.

        Raises:
            InvalidInputError: a malformed id.
            ClientError: an unknown call, or one that is not a waiting ``remember``.
            AnswerRefusedError: the call's turn has ended; nothing was captured or remembered.
        """
        tool_call_id = check_id(tool_call_id, "tool call")
        call, workflow_id = await self._waiting_call(tool_call_id)
        if call.name != REMEMBER:
            raise ClientError(f"tool call {tool_call_id} is {call.name}, not a proposed memory")
        return await self._answer_memory(call, workflow_id, confirmed=confirmed)

    async def _answer_memory(self, call: ToolCallRecord, workflow_id: str, *, confirmed: bool) -> str:
        """Capture the user's verdict on a waiting ``remember`` call (and the memory, if confirmed); signal."""
        memory_id = remembered_memory_id(call.id)
        answer = {"confirmed": confirmed, "user_memory_id": memory_id if confirmed else None}

        async def write(joined: async_sessionmaker) -> None:
            async with joined() as session, session.begin():
                # As strict as the proposal: the model may have copied into it anything it was shown.
                await user_memories.put_user_memory(session, self.account_id, str(call.arguments["text"]),
                                                    privacy=call.privacy, user_memory_id=memory_id)

        handle = self.temporal.get_workflow_handle(workflow_id)
        await self._check_running(handle, call.id)
        await self._capture_and_signal(handle, call.id, json.dumps(answer).encode(), "application/json",
                                       also=write if confirmed else None)
        return workflow_id

    async def wait_until_waiting(self, workflow_id: str, *, timeout: float = 120.0,
                                 or_done: bool = False) -> tuple[str, ...]:
        """Block until a turn waits on deferred tool calls; returns their ids.

        With ``or_done``, a turn that ended without waiting (a real model that called no deferred
        tool) returns ``()`` instead of timing out.
        """
        deadline = asyncio.get_running_loop().time() + timeout
        handle = self.temporal.get_workflow_handle(workflow_id)
        while True:
            status = await self.waiting(workflow_id)
            if status.waiting_for_tool_call_ids:
                return status.waiting_for_tool_call_ids
            if or_done and (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                return ()
            if asyncio.get_running_loop().time() > deadline:
                raise ClientError(f"{workflow_id} is not waiting on any tool after {timeout:.0f}s")
            await asyncio.sleep(0.2)

    async def wait_turn(self, outcome: TurnOutcome, progress: Progress | None = None) -> TurnOutcome:
        """Wait for a turn started with ``wait=False``."""
        handle = self.temporal.get_workflow_handle(outcome.workflow_id, result_type=TurnResult)
        result = await self._wait(handle, progress)
        return TurnOutcome(**{**outcome.__dict__, "result": result, "answer": await self.message_text(result.message_id)})

    async def first_user_message(self, conversation_id: str, branch_id: str) -> str:
        """The id of the first user message on a branch's lineage."""
        async with self.deps.sessions() as session:
            message_id = await branches.first_user_message_id(session, self.account_id, conversation_id, branch_id)
        if message_id is None:
            raise ClientError(f"branch {branch_id} has no user message")
        return message_id

    async def waiting(self, workflow_id: str) -> TurnStatus:
        """What a turn is waiting for (its ``status`` query)."""
        return await self.temporal.get_workflow_handle(workflow_id).query(STATUS_QUERY, result_type=TurnStatus)

    async def _wait(self, handle: WorkflowHandle, progress: Progress | None):
        """The workflow's result; meanwhile report its progress every ``poll_seconds``."""
        task = asyncio.ensure_future(handle.result())
        last = ""
        while not task.done():
            done, _ = await asyncio.wait({task}, timeout=self.poll_seconds)
            if done or progress is None:
                continue
            try:
                status = await handle.query(STATUS_QUERY, result_type=TurnStatus)
                line = f"{handle.id}: {status.round} model call(s)"
                for tool_call_id in status.waiting_for_tool_call_ids:
                    # The query carries ids only; what the call waits for is in the graph.
                    async with self.deps.sessions() as session:
                        call = await tool_store.get_tool_call(session, self.account_id, tool_call_id)
                    line += (f"; tool call {tool_call_id} ({call.name}) waits for {call.waiting_for}"
                             f" (dossier answer {tool_call_id} ANSWER)")
            except RPCError:
                line = f"{handle.id}: running"
            except Exception:  # a parent workflow has no status query
                line = f"{handle.id}: running"
            if line != last:
                progress(line)
                last = line
        return task.result()

    async def transcript(self, conversation_id: str, branch_id: str) -> list[tuple[str, str]]:
        """The human-facing transcript of a branch, all of it: (speaker, text), tool-call-only steps left out."""
        async with self.deps.sessions() as session:
            lineage = await branches.lineage_messages(session, self.account_id, conversation_id, branch_id)
            names = {p.id: p.name for p in await conversations.list_participants(session, self.account_id,
                                                                                  conversation_id)}
        lines = []
        for message in lineage:
            if not message.content.strip():
                continue
            speaker = message.speaker_label or (names.get(message.author_participant_id or "", "assistant")
                                                if message.role is MessageRole.ASSISTANT else "user")
            lines.append((speaker, message.content))
        return lines


def with_running_llm(settings: Settings) -> Settings:
    """``settings`` with ``LOCAL_MODEL_URL`` pointing at the embedded model server, when that runs and none is set.

    The worker `dossier services up` starts gets the URL in its environment; a client started later
    needs it too, to accept a ``local:`` spec before it starts a turn.
    """
    if settings.local_model_url is not None:
        return settings
    for row in services_status(settings):
        if row.name == "llm" and row.state == "running" and row.endpoint:
            return settings.model_copy(update={"local_model_url": row.endpoint.rstrip("/")})
    return settings


def with_running_inspector(settings: Settings) -> Settings:
    """``settings`` with ``INSPECTOR_URL`` resolved, when none is set: the summaries' inspector links.

    The embedded inspector service's recorded URL while it runs (it takes a free port when
    ``INSPECTOR_PORT`` is busy), else the address `dossier inspector` serves on by default.
    """
    if settings.inspector_url is not None:
        return settings
    return settings.model_copy(update={"inspector_url": inspector_service.running_url(settings)
                                       or settings.inspector_base_url()})


_REMEMBER_NAMESPACE = uuid.UUID("0b7e2f5c-3a41-4c6e-9d2b-7f18c0a5e931")


def remembered_memory_id(tool_call_id: str) -> str:
    """The id of the user memory a confirmed ``remember`` call writes (stable: a retried answer writes once)."""
    return str(uuid.uuid5(_REMEMBER_NAMESPACE, f"remember:{tool_call_id}"))


def _confirmation(answer: str) -> bool:
    """``{"confirmed": true|false}`` from an answer to a ``remember`` call.

    Raises:
        InvalidInputError: anything else.
    """
    try:
        value = json.loads(answer)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("confirmed"), bool):
        raise InvalidInputError("a proposed memory is answered with '{\"confirmed\": true}' or "
                                "'{\"confirmed\": false}' (or dossier memory confirm|reject)")
    return value["confirmed"]


def _parses_as_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def default_name(spec: str) -> str:
    """A participant's display name from its model spec: ``scripted:analyst`` -> ``Analyst``."""
    return spec.split(":", 1)[-1].replace("-", " ").replace("_", " ").title()


def _unique_names(models: Sequence[str]) -> list[str]:
    """Display names for model specs, numbered when a spec repeats."""
    names: list[str] = []
    for spec in models:
        base = default_name(spec)
        name = base
        count = 2
        while name in names:
            name = f"{base} {count}"
            count += 1
        names.append(name)
    return names


async def _local_account(deps: GraphDeps, settings: Settings) -> str:
    """This installation's account: created once, remembered under ``DOSSIER_HOME``."""
    path = settings.dossier_home / ACCOUNT_FILE
    account_id = path.read_text().strip() if path.exists() else str(uuid.uuid4())
    async with deps.sessions() as session, session.begin():
        await conversations.create_account(session, account_id, name="local")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(account_id + "\n")
    return account_id


__all__ = ["USAGE_KEYS", "AnswerRefusedError", "ClientError", "DossierClient", "InvalidInputError", "RunRow",
           "TurnOutcome", "UnknownIdError", "check_id", "check_record_ref", "check_text", "default_name",
           "run_usage"]
