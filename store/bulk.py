"""Bulk writes: many nodes of one conversation in a handful of statements.

A :class:`GraphBatch` queues the writes the single-row functions make, with
their arguments, in the order the live path makes them:
:func:`~store.messages.append_message`,
:func:`~store.messages.start_model_run` / :func:`~store.messages.finish_model_run`,
:func:`~store.tools.record_tool_call` / :func:`~store.tools.update_tool_call`,
:func:`~store.tools.insert_artifact` (the row; an S3 payload is put first, as
:func:`store.payloads.capture_artifact` does),
:func:`~store.tool_memories.insert_tool_memory`.
:meth:`GraphBatch.write` then takes one block of ``seq`` values with
:func:`store._sql.allocate_seqs` (the statement behind every single-row
``seq``), hands them out in queue order, and writes each table with one
``COPY`` (:func:`store._sql.copy_rows`; the columns come from the models).
Read back through the normal store functions, the rows are the ones the
single-row calls would have written, ``seq`` for ``seq``.

What a batch does not do, so that it stays a plain write:

* It is not idempotent: ids already stored raise :class:`IntegrityViolation`
  (the caller's transaction then rolls back, so nothing is half-written).
  After a rollback the same batch can be written again, in a new transaction.
* Updates, captures and links apply to nodes queued in the same batch; a
  memory may also supersede or contradict stored memories (those links go
  through the single-row functions after the rows are written).
* Branches and participants are few: create them with
  :func:`~store.branches.fork_branch` and
  :func:`~store.conversations.add_participant`, between batches.

Timestamps the single-row functions take (``at``, ``captured_at``,
``finished_at``, a memory's ``observed_at``) are honoured; the others are
the time of writing, as in the single-row writes. A queued artifact is
readable as a record (:meth:`GraphBatch.artifact`), so its memory is built
with :func:`policy.derive.memory_record`, as a live capture builds it.

:func:`delete_account` and :func:`analyze` are the bulk maintenance writes
that go with it: removing an account's whole graph, and giving the planner
statistics after a large write.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import Table, bindparam, delete, func, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.types import String

from policy.enums import RuntimeKind, ToolCallStatus
from policy.records import ArtifactRecord, ToolMemoryRecord
from store._sql import allocate_seqs, copy_rows, new_id, translate_errors, utcnow
from store.errors import IntegrityViolation, NotFoundError
from store.models import Base, Message, ModelRun, ToolArtifact, ToolCall, ToolMemory
from store.records import ModelRunStatus
from store.tool_memories import add_conflict, set_superseded
from store.tools import ArtifactCapture
from store.writes import NewMessage, NewToolCall, history_entry

logger = logging.getLogger(__name__)

_WRITE_ORDER = (ModelRun, Message, ToolCall, ToolArtifact, ToolMemory)
"""Tables in foreign-key order; ``model_runs.message_id`` is set afterwards."""

ANALYZE_AFTER_ROWS = 1_000
"""A table that gains this many rows through bulk writes in one session is analysed before the next table
is copied.

The next tables' foreign-key checks are planned from the statistics: a table
analysed while it was empty (a fresh database, or after a large delete) makes
Postgres check each new row's reference by scanning every row of the account,
which turns a 100k-row COPY from seconds into hours. ``ANALYZE`` inside the
transaction counts the rows it has written and re-plans those checks."""

_SEQ_COLUMNS = ("seq", "updated_seq", "superseded_seq")
"""Columns that hold a conversation ``seq`` (batch-local until written)."""


@dataclass(frozen=True)
class WrittenBatch:
    """What :meth:`GraphBatch.write` wrote."""

    first_seq: int
    """The first ``seq`` of the block the batch took (``last_seq + 1`` when it took none)."""
    last_seq: int
    """The last ``seq`` it took; the conversation's ``snapshot_seq`` right after."""
    rows: dict[str, int]
    """Rows written, by table name."""
    seqs: dict[str, int]
    """``seq`` of every node written, by id (messages, tool calls, artifacts, memories)."""


class GraphBatch:
    """Writes of one conversation, queued in live order and written together.

    Every queueing method takes the keyword arguments of the single-row
    function of the same name (without ``session``, ``account_id`` and
    ``conversation_id``, which the batch fixes) and returns the id of what it
    queued. Nothing touches the database before :meth:`write`.

    Args:
        account_id: the owning account; the batch writes nothing outside it.
        conversation_id: the conversation every node belongs to.
    """

    def __init__(self, account_id: str, conversation_id: str) -> None:
        self.account_id = account_id
        self.conversation_id = conversation_id
        self._rows: dict[type[Base], list[dict[str, Any]]] = {model: [] for model in _WRITE_ORDER}
        self._runs: dict[str, dict[str, Any]] = {}
        self._calls: dict[str, dict[str, Any]] = {}
        self._artifacts: dict[str, dict[str, Any]] = {}
        self._memories: dict[str, dict[str, Any]] = {}
        self._run_messages: dict[str, str] = {}
        self._stored_links: list[tuple[str, str, str]] = []
        self._seq = 0

    def __len__(self) -> int:
        """The number of rows queued (every node and model run)."""
        return sum(len(rows) for rows in self._rows.values())

    def _take_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _node(self, model: type[Base], values: dict[str, Any]) -> dict[str, Any]:
        row = {"id": values.pop("id") or new_id(), "account_id": self.account_id,
               "conversation_id": self.conversation_id, **values}
        self._rows[model].append(row)
        return row

    def _queued(self, index: dict[str, dict[str, Any]], kind: str, row_id: str) -> dict[str, Any]:
        row = index.get(row_id)
        if row is None:
            raise NotFoundError(kind, row_id)
        return row

    # ------------------------------------------------------------------ transcript

    def append_message(self, message: NewMessage) -> str:
        """Queue :func:`store.messages.append_message`; returns the message id."""
        return self._node(Message, message.row(self._take_seq()))["id"]

    def start_model_run(
        self,
        branch_id: str,
        participant_id: str,
        *,
        runtime_kind: RuntimeKind = RuntimeKind.CHAT,
        provider: str | None = None,
        model: str | None = None,
        workflow_id: str | None = None,
        parent_model_run_id: str | None = None,
        model_run_id: str | None = None,
    ) -> str:
        """Queue :func:`store.messages.start_model_run` (a run takes no ``seq``).
        """
        row = self._node(ModelRun, {
            "id": model_run_id, "branch_id": branch_id, "participant_id": participant_id,
            "runtime_kind": RuntimeKind(runtime_kind).value, "provider": provider, "model": model,
            "workflow_id": workflow_id, "parent_model_run_id": parent_model_run_id, "status": "running",
            "usage": {}, "error": None, "finished_at": None,
        })
        self._runs[row["id"]] = row
        return row["id"]

    def finish_model_run(
        self,
        model_run_id: str,
        *,
        status: ModelRunStatus,
        message_id: str | None = None,
        usage: Mapping[str, Any] | None = None,
        error: str | None = None,
        finished_at: datetime | None = None,
    ) -> None:
        """Queue :func:`store.messages.finish_model_run` for a run started in this batch.

        Raises:
            NotFoundError: the run was not started in this batch.
            IntegrityViolation: ``status`` is not a final status.
        """
        if status == "running":
            raise IntegrityViolation("finish_model_run needs a final status")
        run = self._queued(self._runs, "model_run", model_run_id)
        run.update(status=status, error=error, finished_at=finished_at or utcnow())
        if usage is not None:
            run["usage"] = dict(usage)
        if message_id is not None:
            self._run_messages[model_run_id] = message_id

    # ------------------------------------------------------------------ tools

    def record_tool_call(self, call: NewToolCall) -> str:
        """Queue :func:`store.tools.record_tool_call`; returns the tool call's row id."""
        # Every row of a COPY has the same columns: "now" is the server default the single-row write leaves.
        row = self._node(ToolCall, {**call.row(self._take_seq()), "updated_at": utcnow()})
        self._calls[row["id"]] = row
        return row["id"]

    def update_tool_call(
        self,
        tool_call_id: str,
        *,
        status: ToolCallStatus,
        attempt: int | None = None,
        error: str | None = None,
        waiting_for: str | None = None,
        retry_critical: bool | None = None,
        at: datetime | None = None,
    ) -> None:
        """Queue :func:`store.tools.update_tool_call` for a call recorded in this batch.

        Takes a ``seq`` of its own, as the single-row update does.

        Raises:
            NotFoundError: the call was not recorded in this batch.
            IntegrityViolation: ``attempt`` below 1.
        """
        if attempt is not None and attempt < 1:
            raise IntegrityViolation(f"attempt must be >= 1, got {attempt}")
        row = self._queued(self._calls, "tool_call", tool_call_id)
        seq = self._take_seq()
        status = ToolCallStatus(status)
        row["status"] = status.value
        row["attempts"] = attempt if attempt is not None else row["attempts"]
        row["last_error"] = error if error is not None else row["last_error"]
        row["waiting_for"] = waiting_for
        row["retry_critical"] = retry_critical if retry_critical is not None else row["retry_critical"]
        row["updated_seq"] = seq
        row["updated_at"] = at or utcnow()
        row["history"].append(history_entry(seq=seq, attempt=row["attempts"], status=status, error=error,
                                             waiting_for=waiting_for, retry_critical=row["retry_critical"],
                                             at=row["updated_at"]))

    def insert_artifact(self, tool_call_id: str, capture: ArtifactCapture) -> str:
        """Queue :func:`store.tools.insert_artifact` for a call recorded in this batch.

        What ``capture`` does not give is copied from the queued call as it
        stands when this is called.

        Raises:
            NotFoundError: the call was not recorded in this batch.
        """
        call = self._queued(self._calls, "tool_call", tool_call_id)
        row = self._node(ToolArtifact, capture.row(call, self._take_seq()))
        self._artifacts[row["id"]] = row
        return row["id"]

    def artifact(self, artifact_id: str) -> ArtifactRecord:
        """A queued artifact as the store will return it, for deriving its memory.

        What :func:`policy.derive.memory_record` needs to turn a draft into the
        memory a live capture would write.

        Args:
            artifact_id: an artifact queued in this batch.

        Returns:
            The record; ``seq`` is 0 until the batch is written (then see
            :attr:`WrittenBatch.seqs`).

        Raises:
            NotFoundError: the artifact was not queued in this batch.
        """
        row = self._queued(self._artifacts, "artifact", artifact_id)
        return ArtifactRecord.model_validate(
            {name: row[name] for name in ArtifactRecord.model_fields if name != "seq"} | {"seq": 0}
        )

    # ------------------------------------------------------------------ memories

    def insert_tool_memory(self, memory: ToolMemoryRecord) -> str:
        """Queue :func:`store.tool_memories.insert_tool_memory`.

        As there, ``memory.seq`` and ``memory.superseded_by`` are ignored and
        the links in ``supersedes`` and ``conflicts_with`` are applied on both
        sides: at once for memories queued in this batch, after the rows are
        written for stored ones.

        Raises:
            IntegrityViolation: a memory linked to itself, or superseding a
                queued memory that is not older.
        """
        values = memory.model_dump(
            mode="json", exclude={"seq", "superseded_by", "supersedes", "conflicts_with", "observed_at", "stale_after"}
        )
        values.update(seq=self._take_seq(), observed_at=memory.observed_at, stale_after=memory.stale_after,
                      supersedes=[], conflicts_with=[], superseded_by=None, superseded_seq=None)
        row = self._node(ToolMemory, values)
        self._memories[row["id"]] = row
        for old_id in memory.supersedes:
            self._link("supersede", old_id, row)
        for other_id in memory.conflicts_with:
            self._link("conflict", other_id, row)
        return row["id"]

    def _link(self, kind: Literal["supersede", "conflict"], other_id: str, new: dict[str, Any]) -> None:
        if other_id == new["id"]:
            raise IntegrityViolation(f"memory {other_id!r} cannot {kind} itself")
        other = self._memories.get(other_id)
        if other is None:
            self._stored_links.append((kind, other_id, new["id"]))
        elif kind == "conflict":
            for this, that in ((new, other), (other, new)):
                if that["id"] not in this["conflicts_with"]:
                    this["conflicts_with"].append(that["id"])
        else:
            # The rule of store.tool_memories.set_superseded: only a newer memory
            # supersedes, and the newest superseding memory wins superseded_by.
            if new["seq"] <= other["seq"]:
                raise IntegrityViolation(f"memory {new['id']!r} is not newer than {other_id!r}")
            if other["superseded_seq"] is None or other["superseded_seq"] <= new["seq"]:
                other["superseded_by"], other["superseded_seq"] = new["id"], new["seq"]
            if other_id not in new["supersedes"]:
                new["supersedes"].append(other_id)

    # ------------------------------------------------------------------ write

    @translate_errors
    async def write(self, session: AsyncSession) -> WrittenBatch:
        """Write everything queued, in the caller's transaction.

        Takes the batch's ``seq`` block first (which also checks that the
        conversation is in the account and locks its counter until the
        transaction ends), then writes the tables in foreign-key order.
        The queue is left as it was, so a batch whose transaction rolled
        back can be written again.

        Args:
            session: the caller's session (inside its transaction).

        Returns:
            The ``seq`` block, row counts and each node's ``seq``.

        Raises:
            NotFoundError: the conversation is not in the account, or a row
                references a branch, participant, run or call that is not.
            IntegrityViolation: an id or call id that is already stored (a
                batch written and committed before, too).
        """
        first = await allocate_seqs(session, self.account_id, self.conversation_id, self._seq)
        offset = first - 1
        seqs: dict[str, int] = {}
        counts: dict[str, int] = {}
        for model in _WRITE_ORDER:
            rows = [_shifted(row, offset) for row in self._rows[model]]
            seqs.update((row["id"], row["seq"]) for row in rows if "seq" in row)
            counts[model.__tablename__] = await copy_rows(session, cast(Table, model.__table__), rows)
            await _analyze_when_grown(session, model, len(rows))
        if self._run_messages:
            await _set_run_messages(session, self.account_id, self._run_messages)
        for kind, other_id, new_id_ in self._stored_links:
            if kind == "supersede":
                await set_superseded(session, self.account_id, other_id, new_id_)
            else:
                await add_conflict(session, self.account_id, new_id_, other_id)
        logger.debug("bulk wrote %s into conversation %s (seq %d-%d)", counts, self.conversation_id, first,
                     first + self._seq - 1)
        return WrittenBatch(first_seq=first, last_seq=first + self._seq - 1, rows=counts, seqs=seqs)


def _shifted(row: dict[str, Any], offset: int) -> dict[str, Any]:
    """The row with its batch-local ``seq`` values (1, 2, ...) turned into the conversation's."""
    out = dict(row)
    for key in _SEQ_COLUMNS:
        if out.get(key) is not None:
            out[key] += offset
    if "history" in out:
        out["history"] = [{**entry, "seq": entry["seq"] + offset} for entry in out["history"]]
    return out


async def _set_run_messages(session: AsyncSession, account_id: str, run_messages: Mapping[str, str]) -> None:
    """``model_runs.message_id`` for many runs in one ``UPDATE ... FROM unnest(...)``."""
    pairs = func.unnest(
        bindparam("run_ids", list(run_messages), type_=ARRAY(String)),
        bindparam("message_ids", list(run_messages.values()), type_=ARRAY(String)),
    ).table_valued("run_id", "message_id").render_derived()
    await session.execute(
        update(ModelRun)
        .where(ModelRun.account_id == account_id, ModelRun.id == pairs.c.run_id)
        .values(message_id=pairs.c.message_id)
        .execution_options(synchronize_session=False)
    )


def _account_tables() -> list[Table]:
    return [table for table in Base.metadata.sorted_tables if "account_id" in table.c or table.name == "accounts"]


@translate_errors
async def delete_account(session: AsyncSession, account_id: str) -> None:
    """Delete an account and every row it owns, in the caller's transaction.

    The references that close cycles (the models' ``use_alter`` foreign
    keys: a conversation's root branch, a branch's fork message, a run's
    message and assembly) are cleared first; then each table is emptied of
    the account's rows, children before parents. S3 objects are left alone
    (they are content-addressed; see :meth:`store.artifacts.ArtifactStore.delete`).

    Args:
        session: the caller's session (inside its transaction).
        account_id: the account; an unknown one deletes nothing.
    """
    tables = _account_tables()
    for table in tables:
        cut = {c.key: None for fk in table.foreign_key_constraints if fk.use_alter for c in fk.columns if c.nullable}
        if cut:
            await session.execute(update(table).where(table.c.account_id == account_id).values(**cut))
    for table in reversed(tables):
        owner = table.c.id if table.name == "accounts" else table.c.account_id
        await session.execute(delete(table).where(owner == account_id))


async def _analyze_when_grown(session: AsyncSession, model: type[Base], rows: int) -> None:
    """``ANALYZE`` ``model``'s table once this session has bulk-written ANALYZE_AFTER_ROWS rows into it since.

    Counted per session, so many small batches in one transaction (one per branch) count together.
    """
    grown: dict[str, int] = session.info.setdefault("bulk_rows_since_analyze", {})
    grown[model.__tablename__] = grown.get(model.__tablename__, 0) + rows
    if grown[model.__tablename__] >= ANALYZE_AFTER_ROWS:
        await analyze(session, model)
        grown[model.__tablename__] = 0


async def analyze(session: AsyncSession, *models: type[Base]) -> None:
    """``ANALYZE`` tables: what autovacuum would do shortly after a large write.

    Args:
        *models: the tables to analyse, as models; every graph table when none.
    """
    tables = [cast(Table, model.__table__) for model in models] if models else Base.metadata.sorted_tables
    for table in tables:
        await session.execute(text(f"ANALYZE {table.name}"))


__all__ = ["ANALYZE_AFTER_ROWS", "GraphBatch", "WrittenBatch", "analyze", "delete_account"]
