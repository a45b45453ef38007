"""The inspector's why-not, what-if and diff pages, on :mod:`dossier.audit`.

The answers are the audit module's own (the same as ``dossier why-not``,
``dossier what-if`` and ``dossier diff --json``); this module only calls it
with the viewer's account and hands the pages the JSON form, so a page never
shows more than the CLI would.
"""

from __future__ import annotations

from typing import Any

from activities.deps import GraphDeps


async def why_not(deps: GraphDeps, account_id: str, record_ref: str, model_run_id: str) -> dict[str, Any]:
    """Why ``record_ref`` (``<kind>:<id>`` or a bare id) was or was not in a run's context.

    Raises:
        NotFoundError: an unknown or foreign run or record.
    """
    from dossier import audit

    return (await audit.why_not(deps, account_id, record_ref, model_run_id)).to_json()


async def diff(deps: GraphDeps, account_id: str, model_run_id: str, against: str | None) -> dict[str, Any]:
    """A run's assembly against another run's (default: the participant's previous call).

    Raises:
        NotFoundError: an unknown or foreign run.
    """
    from dossier import audit

    return (await audit.diff(deps, account_id, model_run_id, against)).to_json()


async def what_if(deps: GraphDeps, account_id: str, policy_version: str,
                  conversation_id: str | None) -> dict[str, Any]:
    """The account's (or one conversation's) stored assemblies replayed under ``policy_version``.

    Raises:
        NotFoundError: an unknown or foreign conversation.
    """
    from dossier import audit

    return (await audit.what_if(deps, account_id, policy_version, conversation_id=conversation_id)).to_json()


def policy_versions() -> list[str]:
    """The policy versions a what-if may name (the registry's, newest last)."""
    try:
        from policy import versions
    except ImportError:
        return []
    return list(getattr(versions, "known_versions", lambda: [])())


__all__ = ["diff", "policy_versions", "what_if", "why_not"]
