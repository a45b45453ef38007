"""The dependencies every I/O step needs, bundled once by a composition root.

Activities receive a :class:`GraphDeps` in their constructor (worker, CLI,
tests); nothing here builds a connection at import time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from activities.metrics import RuntimeMetrics
from policy.policy import DEFAULT_POLICY, ContextPolicy
from policy.tokens import TokenCounter
from policy.tools import ToolCatalog
from store.artifacts import ArtifactStore
from store.candidates import DEFAULT_LIMITS, CandidateLimits
from store.tools import INLINE_PAYLOAD_MAX

EXACT_TOKEN_COUNT_MAX_BYTES = 4 * 1024 * 1024
"""Payloads above this size get an estimated (bytes / 4) replay token count:
exact counting of a 50 MB dump would cost seconds for a statistic."""


class RenderedReadCache(OrderedDict[tuple[bytes, bool, int, str, bool], str]):
    """The first-read texts an epoch's calls share (:data:`policy.native.RenderedReads`), least recently used
    out first. Each text is bounded by its read's byte cap (12-48 KiB), so the cache is a few MiB at most."""

    def __init__(self, max_entries: int = 256) -> None:
        super().__init__()
        self.max_entries = max_entries

    def get(self, key, default=None):  # type: ignore[override]
        if key in self:
            self.move_to_end(key)
            return self[key]
        return default

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.max_entries:
            self.popitem(last=False)


@dataclass(frozen=True)
class GraphDeps:
    """Postgres sessions, the artifact store and the pure-policy inputs."""

    sessions: async_sessionmaker[AsyncSession]
    """Session factory (``expire_on_commit=False``)."""
    artifacts: ArtifactStore
    """Raw payloads over the S3 API."""
    counter: TokenCounter
    """Token counter injected into the policy (tiktoken in production)."""
    catalog: ToolCatalog
    """Privacy/freshness metadata of the tools in force. Required: a tool missing
    here is captured and derived under the fail-safe default spec instead of its own."""
    policy: ContextPolicy = DEFAULT_POLICY
    """The context policy in force."""
    limits: CandidateLimits = DEFAULT_LIMITS
    """Bounds of the candidate pools loaded per assembly."""
    inline_max_bytes: int = INLINE_PAYLOAD_MAX
    """Payloads up to this size stay in Postgres; larger ones go to S3."""
    metrics: RuntimeMetrics = field(default_factory=RuntimeMetrics)
    """Where the activities count tokens, omissions and latencies (a fresh registry unless the composition
    root passes the one it serves on ``/metrics``)."""
    rendered: RenderedReadCache = field(default_factory=RenderedReadCache, compare=False, repr=False)
    """First-read texts kept across assemblies: a large result appended to an epoch is compacted and viewed
    once per worker, not on every later call (the texts are the same either way)."""
