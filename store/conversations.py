"""Accounts, conversations, participants and the ``seq`` counter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from sqlalchemy import select, update
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from policy.records import ParticipantRecord, RouteLimit
from store._sql import allocate_seq, get_row, insert_once, new_id, translate_errors
from store.convert import to_conversation, to_participant
from store.errors import IntegrityViolation, NotFoundError
from store.models import Account, Branch, Conversation, Participant
from store.records import ConversationRecord

ParticipantRole = Literal["assistant", "moderator", "subagent", "user"]
"""Roles a participant can play."""


@translate_errors
async def create_account(session: AsyncSession, account_id: str | None = None, *, name: str = "") -> str:
    """Create an account; with an existing ``account_id`` this is a no-op.

    Args:
        account_id: the id to use; a fresh one when ``None``.
    """
    account_id = account_id or new_id()
    await insert_once(session, Account, {"id": account_id, "name": name})
    return account_id


@translate_errors
async def get_account(session: AsyncSession, account_id: str) -> str:
    """Check that an account exists.

    Raises:
        NotFoundError: no such account.
    """
    found = await session.scalar(select(Account.id).where(Account.id == account_id))
    if found is None:
        raise NotFoundError("account", account_id)
    return found


@translate_errors
async def create_conversation(
    session: AsyncSession,
    account_id: str,
    *,
    title: str = "",
    conversation_id: str | None = None,
    root_branch_id: str | None = None,
    root_branch_name: str = "main",
) -> ConversationRecord:
    """Create a conversation and its root branch.

    Safe to retry with the same ``conversation_id``: the existing
    conversation is returned unchanged.

    Args:
        conversation_id: the id to use; a fresh one when ``None``.
        root_branch_id: the root branch's id; a fresh one when ``None``.
        root_branch_name: the root branch's name.

    Returns:
        The conversation, with ``root_branch_id``.

    Raises:
        NotFoundError: the account does not exist.
        IntegrityViolation: the id is taken by another account.
    """
    conversation_id = conversation_id or new_id()
    root_branch_id = root_branch_id or new_id()
    inserted = await insert_once(
        session, Conversation, {"id": conversation_id, "account_id": account_id, "title": title}
    )
    if inserted:
        await insert_once(
            session,
            Branch,
            {
                "id": root_branch_id,
                "account_id": account_id,
                "conversation_id": conversation_id,
                "name": root_branch_name,
            },
        )
        await session.execute(
            update(Conversation)
            .where(Conversation.account_id == account_id, Conversation.id == conversation_id)
            .values(root_branch_id=root_branch_id)
            .execution_options(synchronize_session=False)
        )
    try:
        return await get_conversation(session, account_id, conversation_id)
    except NotFoundError:
        raise IntegrityViolation(f"conversation id {conversation_id!r} is taken") from None


@translate_errors
async def get_conversation(session: AsyncSession, account_id: str, conversation_id: str) -> ConversationRecord:
    """A conversation by id.

    Returns:
        The conversation; ``snapshot_seq`` is its current highest ``seq``.

    Raises:
        NotFoundError: no such conversation in the account.
    """
    return to_conversation(await get_row(session, Conversation, account_id, conversation_id))


@translate_errors
async def list_conversations(session: AsyncSession, account_id: str, *, limit: int = 100) -> list[ConversationRecord]:
    """The account's conversations, newest first.

    Args:
        limit: at most this many.
    """
    rows = await session.scalars(
        select(Conversation)
        .where(Conversation.account_id == account_id)
        .order_by(Conversation.created_at.desc(), Conversation.id)
        .limit(limit)
    )
    return [to_conversation(row) for row in rows]


@translate_errors
async def next_seq(session: AsyncSession, account_id: str, conversation_id: str) -> int:
    """Allocate the next ``seq`` of a conversation.

    The conversation row stays locked until the caller's transaction ends;
    keep such transactions short.

    Returns:
        The allocated ``seq`` (1 for the first node).

    Raises:
        NotFoundError: no such conversation in the account.
    """
    return await allocate_seq(session, account_id, conversation_id)


@translate_errors
async def add_participant(
    session: AsyncSession,
    account_id: str,
    conversation_id: str,
    *,
    name: str,
    role: ParticipantRole = "assistant",
    provider: str | None = None,
    model: str | None = None,
    system_prompt: str = "",
    parent_participant_id: str | None = None,
    config: Mapping[str, Any] | None = None,
    participant_id: str | None = None,
) -> ParticipantRecord:
    """Add a participant to a conversation; safe to retry with the same id.

    Args:
        name: display name and speaker label.
        role: ``assistant``, ``moderator``, ``subagent`` or ``user``.
        provider: LLM provider, for model participants.
        model: model name, for model participants.
        system_prompt: the participant's own instructions.
        parent_participant_id: for a subagent, the participant that spawned it.
        config: free-form settings (temperature, tool profile ...).
        participant_id: the id to use; a fresh one when ``None``.

    Raises:
        NotFoundError: the conversation (or parent participant) does not exist.
        IntegrityViolation: bad role, or the id is taken elsewhere.
    """
    participant_id = participant_id or new_id()
    await insert_once(
        session,
        Participant,
        {
            "id": participant_id,
            "account_id": account_id,
            "conversation_id": conversation_id,
            "name": name,
            "role": role,
            "provider": provider,
            "model": model,
            "system_prompt": system_prompt,
            "parent_participant_id": parent_participant_id,
            "config": dict(config or {}),
        },
    )
    try:
        return await get_participant(session, account_id, participant_id)
    except NotFoundError:
        raise IntegrityViolation(f"participant id {participant_id!r} is taken") from None


@translate_errors
async def get_participant(session: AsyncSession, account_id: str, participant_id: str) -> ParticipantRecord:
    """A participant by id.

    Raises:
        NotFoundError: no such participant in the account.
    """
    return to_participant(await get_row(session, Participant, account_id, participant_id))


@translate_errors
async def participant_config(session: AsyncSession, account_id: str, participant_id: str) -> dict[str, Any]:
    """The participant's free-form ``config`` (for an agent's participant: its stored definition).

    Raises:
        NotFoundError: no such participant in the account.
    """
    return dict((await get_row(session, Participant, account_id, participant_id)).config or {})


def allowed_tools(config: Mapping[str, Any]) -> tuple[str, ...] | None:
    """A participant config's tool allow-list (its agent's ``tools``); ``None``: every tool."""
    tools = config.get("tools")
    return tuple(str(name) for name in tools) if isinstance(tools, list) else None


def mcp_servers(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the MCP servers a participant config's agent declares (``mcp_servers``)."""
    servers = config.get("mcp_servers")
    return tuple(str(name) for name in servers) if isinstance(servers, dict) else ()


def route_limit(config: Mapping[str, Any]) -> RouteLimit | None:
    """A participant config's route limit (its agent's ``route``); ``None``: the provider route as it is.

    A stored route that does not parse fails closed: a limit that lets nothing through.
    """
    route = config.get("route")
    if route is None:
        return None
    try:
        return RouteLimit.model_validate(route)
    except ValidationError:
        return RouteLimit(allowed=frozenset(), raw_allowed=frozenset())


def token_budget(config: Mapping[str, Any]) -> int | None:
    """A participant config's token budget (its agent's ``token_budget``); ``None``: the policy's."""
    budget = config.get("token_budget")
    return budget if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0 else None


@translate_errors
async def list_participants(session: AsyncSession, account_id: str, conversation_id: str) -> list[ParticipantRecord]:
    """Every participant of a conversation, by creation time (then id).

    Returns:
        The participants (empty for an unknown conversation).
    """
    rows = await session.scalars(
        select(Participant)
        .where(Participant.account_id == account_id, Participant.conversation_id == conversation_id)
        .order_by(Participant.created_at, Participant.id)
    )
    return [to_participant(row) for row in rows]
