"""``client.runs``: the account's model runs, and the audit over their stored assemblies.

Explain, why-not, what-if and diff are :mod:`dossier.audit`'s; this facade checks the ids, scopes every
read to the account and turns the store's not-found into :class:`UnknownIdError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from activities.deps import GraphDeps
from dossier import audit
from dossier.client.errors import ClientError, InvalidInputError, UnknownIdError
from dossier.client.inputs import check_id, check_record_ref
from dossier.client.records import RunRow, run_usage
from store import conversations, messages
from store.assemblies import get_context_assembly
from store.errors import NotFoundError


@dataclass(frozen=True)
class Runs:
    """Model runs of one account: listed, explained, compared."""

    deps: GraphDeps
    account_id: str
    ui_url: Callable[[str], str | None]
    """A workflow id -> its Temporal UI link."""

    async def list(self, conversation_id: str | None = None, *, limit: int = 200) -> list[RunRow]:
        """Model runs with their workflow, participant and context assembly.

        Raises:
            InvalidInputError: a malformed conversation id.
            ClientError: an unknown conversation.
        """
        conversation_id = check_id(conversation_id, "conversation")
        rows: list[RunRow] = []
        async with self.deps.sessions() as session:
            if conversation_id is not None:
                try:
                    await conversations.get_conversation(session, self.account_id, conversation_id)
                except NotFoundError as error:
                    raise ClientError(str(error)) from error
            runs = await messages.list_model_runs(session, self.account_id, conversation_id, limit=limit)
            names: dict[str, str] = {}
            for run in runs:
                if run.participant_id not in names:
                    names[run.participant_id] = (
                        await conversations.get_participant(session, self.account_id, run.participant_id)).name
                legacy = assembled = None
                if run.context_assembly_id:
                    stored = await get_context_assembly(session, self.account_id, run.context_assembly_id)
                    legacy, assembled = stored.record.legacy_tokens, stored.record.assembled_tokens
                rows.append(RunRow(
                    model_run_id=run.id, workflow_id=run.workflow_id, runtime_kind=run.runtime_kind.value,
                    conversation_id=run.conversation_id, branch_id=run.branch_id,
                    participant=names[run.participant_id], context_assembly_id=run.context_assembly_id,
                    status=run.status, legacy_tokens=legacy, assembled_tokens=assembled,
                    ui_url=self.ui_url(run.workflow_id) if run.workflow_id else None,
                    started_at=run.started_at.isoformat(),
                    model=f"{run.provider}:{run.model}" if run.provider and run.model else run.model,
                    usage=run_usage(run.usage),
                    seconds=(run.finished_at - run.started_at).total_seconds() if run.finished_at else None,
                ))
        return rows

    async def explain(self, model_run_id: str, *, trace: bool = False) -> audit.Explanation:
        """What a model run saw and why (:func:`dossier.audit.explain`).

        Raises:
            InvalidInputError: a malformed id.
            UnknownIdError: not a run of this account, or a run with no assembly.
        """
        model_run_id = check_id(model_run_id, "model run")
        return await _known(audit.explain(self.deps, self.account_id, model_run_id, trace=trace))

    async def why_not(self, record_id: str, model_run_id: str) -> audit.WhyNot:
        """Why a record was (not) in a model run's context (:func:`dossier.audit.why_not`).

        Raises:
            InvalidInputError: a malformed id.
            UnknownIdError: the record or the run is not this account's.
        """
        record_id = check_record_ref(record_id)
        model_run_id = check_id(model_run_id, "model run")
        return await _known(audit.why_not(self.deps, self.account_id, record_id, model_run_id))

    async def what_if(self, policy_version: str, *, conversation_id: str | None = None, account_id: str | None = None,
                      last: int | None = None) -> audit.WhatIfReport:
        """Stored assemblies recomputed under another policy version (:func:`dossier.audit.what_if`).

        Raises:
            InvalidInputError: a malformed id, no scope or several, ``last`` below 1, an unknown policy version.
            UnknownIdError: a conversation or account that is not this account's.
        """
        from policy.errors import UnknownPolicyVersionError

        conversation_id = check_id(conversation_id, "conversation")
        account_id = check_id(account_id, "account")
        if sum(x is not None for x in (conversation_id, account_id, last)) != 1:
            raise InvalidInputError("what-if takes exactly one of --conversation ID, --account ID or --last N")
        if last is not None and not 1 <= last <= audit.WHAT_IF_MAX:
            raise InvalidInputError(f"--last takes 1 to {audit.WHAT_IF_MAX} runs, not {last}")
        try:
            return await _known(audit.what_if(self.deps, self.account_id, policy_version,
                                              conversation_id=conversation_id, account=account_id, last=last))
        except UnknownPolicyVersionError as error:
            raise InvalidInputError(str(error)) from error

    async def diff(self, model_run_id: str, other_model_run_id: str | None = None, *,
                   policy_version: str | None = None) -> audit.AssemblyDiff:
        """Two assemblies compared (:func:`dossier.audit.diff`).

        Raises:
            InvalidInputError: a malformed id, an unknown policy version, two runs and a policy version.
            UnknownIdError: a run that is not this account's, or a first call with nothing before it.
        """
        from policy.errors import UnknownPolicyVersionError

        model_run_id = check_id(model_run_id, "model run")
        other_model_run_id = check_id(other_model_run_id, "model run")
        if other_model_run_id is not None and policy_version is not None:
            raise InvalidInputError("diff takes a second run or --policy, not both")
        try:
            return await _known(audit.diff(self.deps, self.account_id, model_run_id, other_model_run_id,
                                           policy_version=policy_version))
        except UnknownPolicyVersionError as error:
            raise InvalidInputError(str(error)) from error


async def _known(work: Awaitable[Any]) -> Any:
    """``work``'s result, with a store :class:`NotFoundError` as the client's :class:`UnknownIdError`."""
    try:
        return await work
    except NotFoundError as error:
        raise UnknownIdError(str(error)) from error


__all__ = ["Runs"]
