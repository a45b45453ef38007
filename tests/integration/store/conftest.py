"""Fixtures for the store's integration tests: a migrated database and a bucket.

The session-wide services come from ``tests/integration/conftest.py``:
``engine`` (the migrated fresh database), ``sessions``, ``artifact_store`` (on
a fresh bucket), ``endpoints`` and ``s3`` (a raw minio client). Each test
works in its own account (the ``world`` fixture), so tests never see each
other's rows.
"""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from store import graph
from storeworld import World


@pytest.fixture
async def world(sessions: async_sessionmaker[AsyncSession]) -> World:
    """A fresh account and conversation for one test."""
    async with sessions() as session, session.begin():
        account_id = await graph.create_account(session, name="test")
        conversation = await graph.create_conversation(session, account_id, title="t")
        user = await graph.add_participant(session, account_id, conversation.id, name="User", role="user")
        assistant = await graph.add_participant(
            session, account_id, conversation.id, name="Analyst", provider="scripted", model="m"
        )
    return World(
        account_id=account_id,
        conversation_id=conversation.id,
        root_branch_id=conversation.root_branch_id,
        user_id=user.id,
        assistant_id=assistant.id,
        sessions=sessions,
    )
