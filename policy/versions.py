"""The registry of policy versions: every rule set an assembly may have been made under, by its tag.

An assembly records ``policy.version_tag`` (``<version>#<fingerprint prefix>``,
see :class:`policy.policy.ContextPolicy`). Recomputing a stored assembly looks
its policy up here by that tag. A tag the registry does not know, or a known
name whose fingerprint differs (the rules under that name were edited without a
version bump), is an :class:`~policy.errors.UnknownPolicyVersionError`: replay
never falls back to whatever policy is in force today.

A policy that changes must be registered under a new ``version`` and the old one
kept here, so assemblies made under it stay replayable.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from policy.enums import RuntimeKind
from policy.errors import UnknownPolicyVersionError
from policy.policy import DEFAULT_POLICY, ContextPolicy

LEAN_POLICY = ContextPolicy(
    version="dossier-lean/1",
    message_window=1,
    message_window_by_runtime={RuntimeKind.DISCUSSION: 2, RuntimeKind.MULTI_MODEL: 1},
    max_memories=16,
    stale_handling="omit",
    rehydration_item_bytes=1024,
    rehydration_total_bytes=2048,
)
"""A leaner variant of ``dossier-default/9`` for what-if reviews ("what would a smaller context have shown?").

It differs from the default in exactly these knobs, everything else is the default's:

* ``message_window`` 1 (default 3), and ``message_window_by_runtime`` 2 / 1 for discussion /
  multi-model runs (default 4 / 3): only the current request is kept verbatim, older transcript
  messages drop out of the window;
* ``max_memories`` 16 (default 48): at most 16 tool memories are rendered;
* ``stale_handling`` ``omit`` (default ``marker``): stale memories are dropped, not shown as markers;
* ``rehydration_item_bytes`` 1024 / ``rehydration_total_bytes`` 2048 (default 4096 / 12288): less raw
  evidence is rehydrated, larger raw payloads are cut sooner.
"""

REGISTERED_POLICIES: tuple[ContextPolicy, ...] = (DEFAULT_POLICY, LEAN_POLICY)
"""Every policy version assemblies may name, the one in force (``DEFAULT_POLICY``) first."""

_BY_TAG: Mapping[str, ContextPolicy] = MappingProxyType({p.version_tag: p for p in REGISTERED_POLICIES})
_BY_NAME: Mapping[str, ContextPolicy] = MappingProxyType({p.version: p for p in REGISTERED_POLICIES})


def policy_for_tag(tag: str) -> ContextPolicy:
    """The registered policy an assembly's ``policy_version`` names.

    Args:
        tag: ``<version>#<fingerprint prefix>``, as ``ContextPolicy.version_tag`` makes it.

    Returns:
        The policy whose ``version_tag`` is exactly ``tag``.

    Raises:
        UnknownPolicyVersionError: no registered policy has that tag: the name is unknown, or it is
            known but its fingerprint differs (the rules changed under an unchanged name).
    """
    policy = _BY_TAG.get(tag)
    if policy is not None:
        return policy
    name, _, fingerprint = tag.partition("#")
    known = _BY_NAME.get(name)
    if known is not None:
        raise UnknownPolicyVersionError(
            tag, f"policy {name!r} is registered with fingerprint {known.fingerprint[:12]}, not {fingerprint!r}"
        )
    raise UnknownPolicyVersionError(tag, f"no registered policy is named {name!r}")


def policy_by_name(name_or_tag: str) -> ContextPolicy:
    """A registered policy by its version name (``dossier-lean/1``) or its full tag (for ``--policy``).

    Args:
        name_or_tag: a ``version`` name, or a ``version_tag`` (it contains ``#``).

    Raises:
        UnknownPolicyVersionError: nothing registered matches.
    """
    if "#" in name_or_tag:
        return policy_for_tag(name_or_tag)
    policy = _BY_NAME.get(name_or_tag)
    if policy is None:
        raise UnknownPolicyVersionError(
            name_or_tag, f"no registered policy is named {name_or_tag!r} (known: {', '.join(registered_names())})"
        )
    return policy


def registered_names() -> tuple[str, ...]:
    """The version names of every registered policy, the one in force first."""
    return tuple(p.version for p in REGISTERED_POLICIES)


__all__ = ["LEAN_POLICY", "REGISTERED_POLICIES", "policy_by_name", "policy_for_tag", "registered_names"]
