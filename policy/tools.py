"""Tool specs: the privacy, freshness and derivation metadata of each tool.

A :class:`ToolCatalog` is pure data handed to capture and derivation. A tool
it does not know gets :meth:`ToolCatalog.spec`'s conservative default: the
strictest privacy class (fail closed), session freshness, its result kind
sniffed from the payload.
"""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from typing import Literal

from policy.enums import STRICTEST_PRIVACY, FreshnessClass, PrivacyClass, RuntimeKind, VisibilityScope
from pydantic import Field

from policy.records import Record
from policy.retention import RetentionSpec

ResultKind = Literal["auto", "csv", "json", "search", "text", "file"]


class ToolSpec(Record):
    """What Dossier needs to know about one tool."""

    name: str
    version: str = "1"
    result_kind: ResultKind = "auto"
    """How to read a successful result; ``auto`` sniffs JSON, CSV, then text."""
    privacy: PrivacyClass = PrivacyClass.USER
    freshness: FreshnessClass = FreshnessClass.SESSION
    ttl: timedelta | None = None
    """Lifetime of a result; sets ``stale_after`` (overrides the policy default)."""
    revalidate_with: tuple[str, ...] = ()
    """Tools that refresh a stale result; empty means the tool itself."""
    key_args: tuple[str, ...] | None = None
    """Arguments that identify the subject (for supersession); ``None``: all."""
    resource_args: tuple[str, ...] | None = None
    """Arguments that name the resource the call reads or writes (:mod:`policy.resources`); ``None``: inferred
    (a ``path``-like argument names a file, ``<entity>_id`` a record of the tool's family)."""
    resource_kind: str | None = Field(default=None, min_length=1, max_length=64)
    """What ``resource_args`` name (``file``, ``record:crm.account``, ...); a read and a write of the same kind
    and value are one resource."""
    effect: Literal["auto", "read", "write"] = "auto"
    """Whether the call changes its resources; ``auto``: inferred from the verb of the tool's name."""
    retry_critical: bool = False
    """A failure of this tool must stay visible verbatim until resolved."""
    summary_fields: tuple[str, ...] = ()
    """Result fields a summary shows first, in this order (``a`` or ``a.b`` for
    a nested object's or a list item's field); others follow by rank."""
    summary_chars: int | None = Field(default=None, ge=40)
    """Character budget of this tool's summaries (``None``: the default budget)."""
    retention: RetentionSpec | None = None
    """How long its artifacts and memories are kept, and what happens then
    (:mod:`policy.retention`; ``None``: keep). An agent's override wins."""


class ToolCatalog(Record):
    """The tools a runtime knows, by name."""

    tools: tuple[ToolSpec, ...] = ()

    def spec(self, name: str) -> ToolSpec:
        """The spec for ``name``, or the conservative default.

        A tool the catalog does not know fails closed: its calls and results are
        :data:`~policy.enums.STRICTEST_PRIVACY` (nothing says what it reads or
        returns, so nothing may assume it is only the user's own data). A caller
        that knows better declares the tool, or the call's class.
        """
        for tool in self.tools:
            if tool.name == name:
                return tool
        return ToolSpec(name=name, privacy=STRICTEST_PRIVACY)


def default_visibility(runtime_kind: RuntimeKind) -> VisibilityScope:
    """Where a run's tool state is visible by default.

    Single-agent modes share tool state along the branch (a model switched in
    by a branch send still sees what was done). Modes with several
    participants keep each participant's tool state private to it; a subagent
    child's state is private until promoted.
    """
    if runtime_kind in (RuntimeKind.MULTI_MODEL, RuntimeKind.DISCUSSION, RuntimeKind.SUBAGENT_CHILD):
        return VisibilityScope.PARTICIPANT_PRIVATE
    return VisibilityScope.BRANCH


_WIRE = re.compile(r"[A-Za-z0-9_-]{1,64}")
INVALID_NAME_PREFIX = "invalid_tool_"


def wire_name(name: str) -> str:
    """A tool's name as provider APIs accept it: ``workspace.read_csv`` -> ``workspace__read_csv``.

    OpenAI and Anthropic function names may only hold ``[A-Za-z0-9_-]`` (1-64); Dossier's
    names are dotted, and a double underscore encodes the dot. A name that still does not
    fit (a provider's response named a tool that no registry would accept, with spaces or
    newlines in it) becomes ``invalid_tool_<sha256 prefix>``: the recorded call keeps the
    name as the model sent it, and every later context stays one a provider accepts.
    """
    wire = name.replace(".", "__")
    if _WIRE.fullmatch(wire):
        return wire
    return INVALID_NAME_PREFIX + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def canonical_name(wire: str) -> str:
    """The tool name behind a wire name (the inverse of :func:`wire_name`); canonical names pass through."""
    return wire.replace("__", ".")
