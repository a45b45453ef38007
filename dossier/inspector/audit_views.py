"""The inspector's why-not, what-if and diff pages, on :mod:`dossier.audit`.

The answers are the audit module's own (the same as ``dossier why-not``,
``dossier what-if`` and ``dossier diff --json``); this module only calls it
with the viewer's account and hands the pages the JSON form, so a page never
shows more than the CLI would. A foreign id raises the same ``NotFoundError``
as an unknown one; a policy version nobody registered is an
:class:`~policy.errors.UnknownPolicyVersionError`, which the page shows.
"""

from __future__ import annotations

from typing import Any

from activities.deps import GraphDeps
from dossier import audit
from dossier.inspector.reads import check_uuid
from policy.versions import registered_names


async def why_not(deps: GraphDeps, account_id: str, record: str, model_run_id: str) -> dict[str, Any]:
    """Why ``record`` (``<kind>:<id>`` or a bare id) was or was not in a run's context.

    Raises:
        NotFoundError: an unknown or foreign run or record (a malformed id too).
    """
    record_id = check_uuid(record.rpartition(":")[2], "record")
    return (await audit.why_not(deps, account_id, record_id, model_run_id)).to_json()


async def diff(deps: GraphDeps, account_id: str, model_run_id: str, against: str | None) -> dict[str, Any]:
    """A run's assembly against another run's (default: the participant's previous call).

    Raises:
        NotFoundError: an unknown or foreign run; a first call with no previous one.
    """
    return (await audit.diff(deps, account_id, model_run_id, against)).to_json()


async def what_if(deps: GraphDeps, account_id: str, policy_version: str,
                  conversation_id: str | None) -> dict[str, Any]:
    """The account's (or one conversation's) stored assemblies replayed under ``policy_version``.

    Raises:
        NotFoundError: an unknown or foreign conversation.
        UnknownPolicyVersionError: a version no registered policy carries.
    """
    if conversation_id is not None:
        report = await audit.what_if(deps, account_id, policy_version, conversation_id=conversation_id)
    else:
        report = await audit.what_if(deps, account_id, policy_version, account=account_id)
    return report.to_json()


def policy_versions() -> list[str]:
    """The policy versions a what-if may name (the one in force first)."""
    return list(registered_names())


__all__ = ["diff", "policy_versions", "what_if", "why_not"]
