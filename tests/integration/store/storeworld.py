"""The ``World`` a store test works in (imported by the tests and their conftest)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from policy.enums import MessageRole
from store import graph


@dataclass(frozen=True)
class World:
    """A fresh account with one conversation, its root branch and two participants."""

    account_id: str
    conversation_id: str
    root_branch_id: str
    user_id: str
    assistant_id: str
    sessions: async_sessionmaker[AsyncSession]

    async def say(self, branch_id: str, content: str, **kwargs: object) -> str:
        """Append a message in its own transaction; returns its id."""
        kwargs.setdefault("role", MessageRole.USER)
        async with self.sessions() as session, session.begin():
            message = await graph.append_message(
                session, self.account_id, self.conversation_id, branch_id, content=content, **kwargs  # type: ignore[arg-type]
            )
        return message.id
