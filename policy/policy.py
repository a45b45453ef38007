"""The context policy: an immutable, versioned set of rules the assembler obeys.

A policy is data. Its ``version`` names it for humans; its ``fingerprint`` is
a hash of every field, so two assemblies that report the same
``policy_version`` provably ran under the same rules.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from pydantic import Field, field_serializer

from policy.enums import FreshnessClass, PrivacyClass, RuntimeKind
from policy.records import Record, canonical_json

_ALL = frozenset(PrivacyClass)
_NOT_SECRET = _ALL - {PrivacyClass.SECRET_ADJACENT}


class ProviderRoute(Record):
    """What one provider route may receive."""

    name: str
    allowed: frozenset[PrivacyClass]
    """Privacy classes whose compact records (memories, summaries) may be sent."""
    raw_allowed: frozenset[PrivacyClass]
    """Privacy classes whose raw artifact bytes may be rehydrated; a subset of
    ``allowed`` (a class whose summary is denied never has its raw sent)."""

    @field_serializer("allowed", "raw_allowed")
    def _sorted(self, classes: frozenset[PrivacyClass]) -> list[str]:
        # Set iteration order depends on the hash seed; the fingerprint must not.
        return sorted(c.value for c in classes)


FAIL_CLOSED_ROUTE = ProviderRoute(
    name="fail-closed",
    allowed=frozenset({PrivacyClass.PUBLIC}),
    raw_allowed=frozenset({PrivacyClass.PUBLIC}),
)
"""Used for a route the policy does not know: only public records pass."""


DEFAULT_ROUTES: tuple[ProviderRoute, ...] = (
    ProviderRoute(name="local", allowed=_ALL, raw_allowed=_NOT_SECRET),
    ProviderRoute(name="scripted", allowed=_ALL, raw_allowed=_NOT_SECRET),
    ProviderRoute(
        name="openai",
        allowed=_NOT_SECRET,
        # Google's API terms restrict sending Google-derived user data to other
        # model vendors; a summary with a revalidation hint is allowed, the raw
        # body is not.
        raw_allowed=frozenset({PrivacyClass.PUBLIC, PrivacyClass.USER, PrivacyClass.OAUTH}),
    ),
    ProviderRoute(
        name="anthropic",
        allowed=_NOT_SECRET,
        # As for openai: a hosted vendor gets no secret-adjacent records and no raw Google-derived bytes.
        raw_allowed=frozenset({PrivacyClass.PUBLIC, PrivacyClass.USER, PrivacyClass.OAUTH}),
    ),
    ProviderRoute(
        name="public-only",
        allowed=frozenset({PrivacyClass.PUBLIC}),
        raw_allowed=frozenset({PrivacyClass.PUBLIC}),
    ),
)


DEFAULT_CACHE_TTL_SECONDS: dict[str, int] = {"anthropic": 300, "openai": 300}
"""Anthropic's default cache entries live 5 minutes after their last read; OpenAI keeps a cached prefix for
5-10 minutes of inactivity (the shorter is assumed)."""


DEFAULT_CACHE_LONG_TTL_SECONDS: dict[str, int] = {"anthropic": 3600}
"""Anthropic's 1-hour cache duration (written at 2x). OpenAI's extended retention (24 hours, same price) is
offered by some models only, so it is not assumed."""


DEFAULT_FRESHNESS_TTL: dict[FreshnessClass, timedelta | None] = {
    FreshnessClass.VOLATILE: timedelta(minutes=15),
    FreshnessClass.SESSION: timedelta(hours=12),
    FreshnessClass.BOUNDED: timedelta(days=1),
    FreshnessClass.DURABLE: timedelta(days=30),
    FreshnessClass.PERMANENT: None,
}
"""Used when a memory carries no explicit ``stale_after``."""


class ContextPolicy(Record):
    """Every knob of context assembly; frozen, hashed, versioned."""

    version: str = "dossier-default/9"
    """Human name of the rule set; bump it whenever a default changes."""
    routes: tuple[ProviderRoute, ...] = DEFAULT_ROUTES
    default_token_budget: int = 8192
    """Prompt token budget when the generation boundary sets none: the whole assembled context, the
    epoch's prefix and its appended events together, stays within it."""
    message_window: int = 3
    """Most recent transcript messages kept verbatim (the current request and
    the exchange before it). Tool results, plans and open calls reach the
    model as graph records, so the window only carries the conversation's thread."""
    message_window_by_runtime: dict[RuntimeKind, int] = Field(
        default_factory=lambda: {RuntimeKind.DISCUSSION: 4, RuntimeKind.MULTI_MODEL: 3}
    )
    """Wider windows where several speakers take turns: a speaker needs the
    round it is answering, not only the last line of it."""
    keep_opening_request: bool = True
    """The lineage's first user message (the task statement) stays in view
    however far the window has moved."""
    keep_fork_point: bool = True
    """On a forked branch, the message it forked from stays in view: the
    branch exists to answer it differently."""
    keep_older_user_messages: bool = False
    """Older user messages compete for the budget instead of being dropped."""
    transcript_summary_chars: int = Field(default=1200, ge=0)
    """Messages that fall out of the window are carried as one summary record (their span, a line per
    message with its id, newest first up to this many characters, and how many were not listed), never
    as silence; each stays recallable by its id. 0: they are only counted, as before version 7."""
    transcript_summary_after: int = Field(default=6, ge=1)
    """The summary record is carried once at least this many messages are past the window (a long
    conversation); fewer are only counted, in their decisions."""
    max_message_chars: int = 4000
    """Longer model-written transcript messages are cut, with a marker, in the context; a user's message
    never is (when one alone is over the budget, its decision says so)."""
    stale_handling: str = Field(default="marker", pattern="^(marker|omit)$")
    """``marker``: stale memories appear as markers without their values and
    with revalidation hints; ``omit``: they are dropped."""
    freshness_ttl: dict[FreshnessClass, timedelta | None] = Field(
        default_factory=lambda: dict(DEFAULT_FRESHNESS_TTL)
    )
    max_memories: int = 48
    """Upper bound on tool memories rendered (after priority ordering)."""
    max_error_chars: int = 400
    """Open and failed calls keep their error's headline and its last lines
    verbatim up to this length (the final line is kept whole)."""
    max_failed_tools: int = Field(default=8, ge=0)
    """The owner's failed calls are grouped by tool, one line per tool (its newest call and error, then
    the ids of the earlier ones); the tools that failed most recently keep such a line, the failed calls
    of the others share one line of ids, so recovery state stays bounded however many calls failed."""
    rehydration_item_bytes: int = 4096
    rehydration_total_bytes: int = 12288
    native_result_bytes: int = 12288
    """The participant's own tool results after the epoch's boundary reach it as native tool
    messages: the raw result when it is at most this big (at the default budget; in proportion
    above it, :meth:`whole_result_bytes`) and its route may carry its raw bytes, else a view or
    the result's compact memory."""
    memory_detail_budget: int | None = Field(default=16384, ge=0)
    """A text result's memory is shown in detail (its most telling lines up to half its size, at most
    1,500 characters: ``policy.summarise.text_summary``) in a context whose token budget is at least
    this; below it, as its brief (the first line, up to two lines that say something failed, the line count).
    ``None``: always the brief."""
    native_view_bytes: int = Field(default=4096, ge=0)
    """A text result over ``native_result_bytes`` is first read as a view of about this many bytes (its
    head, tail and the lines that say something failed, with the line ranges of the rest to recall:
    ``policy/views.py``) instead of its summary line; 0 sends the summary."""
    native_view_source_bytes: int = Field(default=1 << 20, ge=0)
    """Results larger than this get their summary, not a view (a view reads the whole artifact)."""
    native_compact: bool = True
    """A structured (JSON, Python-literal) result shown whole is sent as its compact, lossless text
    (``policy.compact``: the same values, tables for lists of records) when that saves 10% or more."""
    epochs: bool = True
    """Consecutive calls of a participant share a cache epoch: a stable prefix, then the events since,
    appended natively (``policy/epochs.py``). False: every call starts a new epoch, assembled afresh."""
    epoch_growth_tokens: int | None = None
    """Optional cap on an epoch's appended part; past it the next call starts a new epoch. ``None``:
    only the token budget (the whole context's) ends an epoch for size."""
    own_step_text_chars: int | None = 0
    """Text the participant wrote next to its own tool calls, kept in the appended part up to this
    many characters. Text that only restates a call (a ReAct agent's action blob) is always left
    out: the native call carries it. ``None`` keeps the rest whole, 0 drops it."""
    epoch_break_even: bool = False
    """A call that could continue its epoch starts a new one when that pays: the new epoch's smaller context
    (the results already read carried as their memories) is written to the cache once and then read on every
    later call, against reading the whole grown context on each of them. The remaining calls are estimated as
    many as the participant has made so far on the lineage (``policy.epochs.restart_pays``). Off by default:
    on the coding-agent runs it saved less than the carried references it lost (docs/benchmarks.md)."""
    break_even_min_tokens: int = Field(default=1024, ge=0)
    """The appended part below which the break-even restart is not weighed (it cannot save much)."""
    cache_read_price: float = Field(default=0.1, gt=0)
    """A cached input token's price as a share of an uncached one (Anthropic, OpenAI GPT-5: 0.1)."""
    cache_write_price: float = Field(default=1.25, gt=0)
    """A token written to the cache, as a share of an uncached one: Anthropic's 5-minute cache, the dearest
    write of the providers (OpenAI: 1.0)."""
    cache_ttl_seconds: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_CACHE_TTL_SECONDS))
    """How long each provider route keeps a prompt prefix cached after its last use. A call that comes later
    than this after the participant's previous call finds the cache cold: continuing the epoch would write the
    whole grown context to the cache again, so the epoch restarts when the new one is smaller (a reason that
    starts ``cold cache:``). A route not listed (a local server's slot) is never assumed cold."""
    cache_long_ttl_seconds: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_CACHE_LONG_TTL_SECONDS))
    """The longer cache tier a route sells, in seconds (Anthropic's 1-hour entries). A call that came later than
    the route's ``cache_ttl_seconds`` after the participant's previous one, but within this, asks for the longer
    tier: if the next call comes as late, one write at ``cache_long_write_price`` beats a short write now and
    another when the next call finds it gone. A route not listed keeps its provider's default lifetime."""
    cache_long_write_price: float = Field(default=2.0, gt=0)
    """A token written to the longer tier, as a share of an uncached one (Anthropic's 1-hour cache: 2.0)."""
    epoch_supersession: str = Field(default="note", pattern="^(restart|note)$")
    """When an appended result supersedes a memory in the prefix: ``note`` it right after the result
    (the prefix keeps the older line, the note names it superseded, as for an appended result), or
    ``restart`` the epoch (the next prefix leaves the older line out)."""
    epoch_staleness: str = Field(default="restart", pattern="^(restart|note)$")
    """When a memory in the prefix goes stale during an epoch: ``restart`` (the new prefix shows its
    stale marker), or ``note`` it after the events so far (the prefix keeps the line it started with)."""

    def whole_result_bytes(self, token_budget: int | None) -> int:
        """The largest result sent whole: ``native_result_bytes`` at the default budget, growing with a
        larger one (a 32k-token context holds a 48 KiB file view whole), never below it."""
        if token_budget is None or token_budget <= self.default_token_budget:
            return self.native_result_bytes
        return self.native_result_bytes * token_budget // self.default_token_budget

    def detailed_memories(self, token_budget: int | None) -> bool:
        """Whether text memories show their detailed summary under ``token_budget`` (``None``: the default)."""
        budget = self.default_token_budget if token_budget is None else token_budget
        return self.memory_detail_budget is not None and budget >= self.memory_detail_budget

    def window_for(self, runtime_kind: RuntimeKind) -> int:
        """The transcript window for a runtime mode."""
        return self.message_window_by_runtime.get(runtime_kind, self.message_window)

    def route(self, name: str) -> ProviderRoute | None:
        """The route called ``name``, or ``None`` when the policy has none."""
        for route in self.routes:
            if route.name == name:
                return route
        return None

    @property
    def fingerprint(self) -> str:
        """sha256 over the canonical JSON of every field."""
        data = self.model_dump(mode="json")
        return hashlib.sha256(canonical_json(data).encode()).hexdigest()

    @property
    def version_tag(self) -> str:
        """``<version>#<fingerprint prefix>``: what assemblies record."""
        return f"{self.version}#{self.fingerprint[:12]}"


DEFAULT_POLICY = ContextPolicy()
