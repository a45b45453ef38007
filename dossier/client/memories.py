"""``client.memories``: the account's user memories (what ``dossier memory`` does)."""

from __future__ import annotations

from dataclasses import dataclass

from activities.deps import GraphDeps
from dossier.client.errors import ClientError, InvalidInputError
from dossier.client.inputs import check_id, check_text
from policy.records import UserMemoryRecord
from store import user_memories


@dataclass(frozen=True)
class Memories:
    """Facts about the user of one account; every later context of the account may carry them."""

    deps: GraphDeps
    account_id: str
    max_bytes: int
    """``MESSAGE_MAX_BYTES``: the largest memory text accepted."""

    async def add(self, text: str) -> UserMemoryRecord:
        """Remember a fact about the user of this account; every later context of the account may carry it.

        Raises:
            InvalidInputError: empty text, or text that is not storable (NUL, over the size limit).
        """
        check_text(text, "memory", max_bytes=self.max_bytes)
        if not text.strip():
            raise InvalidInputError("a memory needs some text")
        async with self.deps.sessions() as session, session.begin():
            return await user_memories.put_user_memory(session, self.account_id, text)

    async def list(self, *, limit: int = 100) -> list[UserMemoryRecord]:
        """This account's user memories, oldest first (never another account's)."""
        async with self.deps.sessions() as session:
            return await user_memories.list_user_memories(session, self.account_id, limit=limit)

    async def forget(self, user_memory_id: str) -> None:
        """Delete one of this account's user memories.

        Raises:
            InvalidInputError: a malformed id.
            ClientError: no such memory in this account (another account's reads the same way).
        """
        user_memory_id = check_id(user_memory_id, "memory")
        async with self.deps.sessions() as session, session.begin():
            if not await user_memories.forget_user_memory(session, self.account_id, user_memory_id):
                raise ClientError(f"no memory {user_memory_id} in this account")


__all__ = ["Memories"]
