"""Helpers shared by the store tests: the ``World`` a test works in, record builders."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from policy.enums import FreshnessClass, MessageRole, PrivacyClass, VisibilityScope
from policy.records import Locator, ToolMemoryRecord
from store import graph
from store.writes import NewMessage


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
                session, self.account_id, self.conversation_id, NewMessage(
                    branch_id=branch_id, content=content, **kwargs)  # type: ignore[arg-type]
            )
        return message.id


NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def memory(world: World, memory_id: str, *, branch_id: str | None = None, **fields: object) -> ToolMemoryRecord:
    """A tool memory record with sensible defaults."""
    values: dict[str, object] = dict(
        id=memory_id,
        branch_id=branch_id or world.root_branch_id,
        seq=0,
        owner_participant_id=world.assistant_id,
        source_artifact_ids=(),
        source_tool="read_sheet",
        subject_key="read_sheet:{\"sheet\":\"Q3\"}",
        title="read_sheet(sheet=Q3)",
        summary="3 rows, total 42",
        payload={"rows": 3, "total": 42},
        visibility=VisibilityScope.BRANCH,
        privacy=PrivacyClass.USER,
        freshness=FreshnessClass.DURABLE,
        observed_at=NOW,
        locators=(Locator(artifact_id="a-1", kind="rows", start=1, end=3),),
    )
    values.update(fields)
    return ToolMemoryRecord.model_validate(values)
