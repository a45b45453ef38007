"""Hostile provider responses: a model's own output is untrusted data too.

A provider's response reaches the graph in three ways: its text becomes the
assistant message, its tool-call names become recorded tool calls (a name it
was never offered included), and its arguments become the calls' arguments.
For a sample of the corpus, one chat turn runs through Temporal and the
worker's real activities (``call_model`` recording, ``execute_tool``,
assembly) with a model that answers its first call with the payload as its
text, as the name of a tool it was never offered and in that call's
arguments, beside a real tool call, and then answers. (The SDKs' parsing of
a response is checked in ``tests/unit/providers``.) The turn is compared with the same turn under harmless text
(:data:`~harness.harden.corpus.BENIGN`).

A case is an **elevation** when any of these holds:

* the second call's system prompt differs from the control's;
* the second call is offered a different tool set;
* a tool runs that the control did not run, or the hostile name ran anything;
* outside the assistant's own messages and tool messages (where the model's
  words and the captured results are data of their own roles), a line appears
  that the control does not have, or an id is cited that is no record;
* user memories or skill states changed.

The model's text is kept as its own assistant message (NUL aside): the check
is that it stays there.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from activities.providers.base import ModelRequest, ModelResponse, ProviderUsage
from harness.harden.corpus import BENIGN, Payload
from harness.harden.structure import account_state, extra_lines, forged_ids
from harness.harden.report import Figures
from harness.harden.stack import Stack
from policy.enums import MessageRole
from policy.records import ChatMessage, ToolCallRequest

PART = "injection"
SAFE_TOOL = "workspace.list_files"


@dataclass
class HostileModel:
    """A model whose first response carries the payload everywhere a provider response can; it then answers."""

    payload: Payload
    name: str = "hostile"
    requests: list[ModelRequest] = field(default_factory=list)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        first = self.requests[0].run_id == request.run_id  # a retried first call answers the same way
        if not first:
            return ModelResponse(text="Done.", usage=ProviderUsage())
        words = self.payload.text
        return ModelResponse(text=words, tool_calls=(
            ToolCallRequest(call_id="call_a", name=words[:200] or "x", arguments={"note": words}),
            ToolCallRequest(call_id="call_b", name=SAFE_TOOL, arguments={"prefix": "sales/"}),
        ))


@dataclass
class _Run:
    tools_run: list[str]
    """Names of the tool calls that succeeded (ran)."""
    second: ModelRequest | None
    state_before: dict[str, str]
    state_after: dict[str, str]
    real: set[str]
    status: str


async def _turn(stack: Stack, client: Any, queue: str, model: HostileModel) -> _Run:
    from dossier.client import DossierClient

    async with stack.deps.sessions() as session, session.begin():
        from store import conversations

        account = await conversations.create_account(session, name="harden provider response")
    settings = stack.settings.model_copy(update={"temporal_task_queue": queue})
    dossier = DossierClient(deps=stack.deps, temporal=client, settings=settings, account_id=account,
                            providers=lambda spec: (model, "hostile"))
    before = await _memory_state(stack, account)
    outcome = await dossier.chat("Which region drove Q3 revenue?", model="scripted:analyst", wait=False)
    done = await asyncio.wait_for(dossier.wait_turn(outcome), timeout=180)
    async with stack.deps.sessions() as session:
        ran = [r[0] for r in (await session.execute(text(
            "SELECT name FROM tool_calls WHERE account_id=:a AND status='succeeded' ORDER BY seq"),
            {"a": account})).all()]
        real = {r[0].replace("-", "") for r in (await session.execute(text(
            "SELECT id FROM tool_calls WHERE account_id=:a UNION SELECT id FROM tool_memories WHERE account_id=:a "
            "UNION SELECT id FROM tool_artifacts WHERE account_id=:a UNION SELECT id FROM skill_states "
            "WHERE account_id=:a"), {"a": account})).all()}
    second = model.requests[1] if len(model.requests) > 1 else None
    return _Run(tools_run=ran, second=second, state_before=before,
                state_after=await _memory_state(stack, account), real=real,
                status=done.result.status if done.result else "none")


async def _memory_state(stack: Stack, account: str) -> dict[str, str]:
    """Digests of the account's user memories and skill states (the turn itself adds the participant)."""
    state = await account_state(stack, account)
    return {k: v for k, v in state.items() if k in ("user_memories", "skill_states")}


def _data_roles_dropped(chat: tuple[ChatMessage, ...]) -> list[ChatMessage]:
    """The context without the roles whose content is data of its own: the model's words and tool results."""
    return [m for m in chat if m.role not in (MessageRole.ASSISTANT, MessageRole.TOOL)]


def judge_provider(run: _Run, control: _Run) -> list[str]:
    """Why ``run`` is an elevation compared with ``control`` (empty: it is not)."""
    why: list[str] = []
    if run.second is None or control.second is None:
        return [f"the turn made no second model call (status {run.status})"]
    if run.second.messages[0].content != control.second.messages[0].content:
        why.append("the participant's prompt changed")
    if run.second.tools != control.second.tools:
        why.append("the tool set offered changed")
    if set(run.tools_run) != set(control.tools_run):
        why.append(f"tools ran {run.tools_run} (control {control.tools_run})")
    got_chat, base_chat = _data_roles_dropped(run.second.messages), _data_roles_dropped(control.second.messages)
    extra = extra_lines(got_chat, run.real, base_chat, control.real)
    if extra:
        why.append(f"forged lines outside the model's own words {extra}")
    forged = forged_ids(got_chat, run.real)
    if forged:
        why.append(f"forged ids {sorted(set(forged))[:4]}")
    if run.state_before != run.state_after:
        why.append("user memories or skill states changed")
    return why


async def run_provider_responses(stack: Stack, figures: Figures, sample: list[Payload]) -> tuple[int, int]:
    """The sample's payloads as provider responses, each one turn through Temporal.

    Returns:
        (payloads run, elevations).
    """
    from dossier.runtime import build_worker, temporal_client

    client = await temporal_client(stack.settings)
    queue = f"harden-provider-{uuid.uuid4().hex[:8]}"
    models: dict[str, HostileModel] = {}

    def providers(spec: str) -> tuple[HostileModel, str]:
        return models["current"], "hostile"

    worker = build_worker(client, stack.deps, task_queue=queue, providers=providers)
    elevations = 0
    async with worker:
        models["current"] = HostileModel(BENIGN)
        control = await _turn(stack, client, queue, models["current"])
        if control.second is None or SAFE_TOOL not in control.tools_run:
            raise RuntimeError(f"the provider-response control did not run as designed: {control}")
        for payload in sample:
            models["current"] = HostileModel(payload)
            try:
                run = await _turn(stack, client, queue, models["current"])
            except Exception as error:  # the turn did not finish: a crash, with the payload to reproduce it
                figures.details["injection_crashes"] = figures.details.get("injection_crashes", 0) + 1
                figures.finding(PART, f"provider response turn failed on payload {payload.name}",
                                error=f"{type(error).__name__}: {error}"[:300],
                                reproducer=f"harness.harden.provider.HostileModel({payload.name!r})")
                elevations += 1
                continue
            why = judge_provider(run, control)
            if why:
                elevations += 1
                figures.finding(PART, f"provider response {payload.name} elevated", why=why[:4],
                                text=json.dumps(payload.text[:120]))
    figures.details["provider_response_turns"] = 1 + len(sample)
    return len(sample), elevations
