"""Synthetic tool results for the growth benchmark: payloads, their derived memories and token counts.

Results are indexed, deterministic for a seed, and independent of account,
branch and ids, so every configuration shares one precomputed cache.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from policy.derive import MemoryDraft, derive_memory
from policy.payloads import decode_payload
from policy.enums import ToolCallStatus
from policy.tools import ToolSpec

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
"""Logical time of the first turn; turns are :data:`TURN_SECONDS` apart."""
TURN_SECONDS = 30
PLACEHOLDER_ARTIFACT = "__artifact__"
"""The artifact id cached drafts cite; the loader puts the real one in."""

TOOLS: dict[str, ToolSpec] = {
    "orders.query": ToolSpec(name="orders.query", key_args=("region", "status")),
    "ci.logs": ToolSpec(name="ci.logs", freshness="durable", key_args=("job",)),  # type: ignore[arg-type]
    "calendar.list": ToolSpec(name="calendar.list", freshness="volatile", key_args=("day",)),  # type: ignore[arg-type]
    "files.read": ToolSpec(name="files.read", freshness="bounded", key_args=("path",)),  # type: ignore[arg-type]
}
WORDS = (
    "freight invoice carrier route depot pallet customs delay manifest quote region warehouse driver "
    "capacity lane schedule audit refund ticket escalation shipment backlog forecast margin"
).split()


@dataclass(frozen=True)
class ToolResult:
    """One precomputed tool exchange (independent of account, branch and ids)."""

    tool: str
    arguments: dict[str, Any]
    status: ToolCallStatus
    content_type: str
    payload: bytes
    sha256: str
    tokens: int
    draft: MemoryDraft
    """Derived as if observed at :data:`T0`; locators cite :data:`PLACEHOLDER_ARTIFACT`."""

    def draft_for(self, artifact_id: str, observed_at: datetime) -> MemoryDraft:
        """The draft as if derived from ``artifact_id`` observed at ``observed_at``."""
        stale = None if self.draft.stale_after is None else observed_at + (self.draft.stale_after - T0)
        locators = tuple(loc.model_copy(update={"artifact_id": artifact_id}) for loc in self.draft.locators)
        return self.draft.model_copy(update={"locators": locators, "stale_after": stale})


def sentence(rng: random.Random, words: int) -> str:
    """``words`` random words from :data:`WORDS`, as a sentence."""
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _payload(i: int, rng: random.Random) -> tuple[str, dict[str, Any], ToolCallStatus, str, bytes]:
    kind = i % 4
    if i % 41 == 5:
        tool = ("orders.query", "ci.logs", "calendar.list", "files.read")[kind]
        lines = ["Traceback (most recent call last):"] + [
            f'  File "/srv/{tool.replace(".", "/")}/handler.py", line {rng.randint(10, 400)}, in step_{k}'
            for k in range(rng.randint(4, 14))
        ]
        lines.append(f"{tool}.UpstreamError: HTTP 503 from upstream after {rng.randint(2, 9)}s (request {i:08x})")
        args = {"job": f"job-{rng.randint(1, 80)}"} if tool == "ci.logs" else {"region": "eu", "status": "open"}
        return tool, args, ToolCallStatus.FAILED, "text/plain", "\n".join(lines).encode()
    if kind == 0:
        args = {"region": rng.choice(["eu", "us", "apac", "latam", "mea"]), "status": rng.choice(["open", "late"])}
        rows = [
            {
                "id": f"ORD-{i}-{k}",
                "customer": f"{rng.choice(WORDS)}-{rng.randint(1, 999)}",
                "status": rng.choice(["open", "shipped", "late", "held"]),
                "amount": f"{rng.uniform(5, 900):.2f}",
                "currency": "EUR",
                "updated": f"2026-11-{rng.randint(1, 28):02d}",
            }
            for k in range(rng.randint(3, 28))
        ]
        body = {"query": "orders", **args, "rows": rows, "count": len(rows)}
        return "orders.query", args, ToolCallStatus.SUCCEEDED, "application/json", json.dumps(body).encode()
    if kind == 1:
        args = {"job": f"job-{rng.randint(1, 80)}", "ref": f"{rng.getrandbits(28):07x}"}
        lines = [
            f"[{k:04d}] {rng.choice(['INFO', 'INFO', 'INFO', 'WARN'])} {sentence(rng, rng.randint(4, 9))}"
            for k in range(rng.randint(8, 50))
        ]
        return "ci.logs", args, ToolCallStatus.SUCCEEDED, "text/plain", "\n".join(lines).encode()
    if kind == 2:
        args = {"day": f"2026-11-{rng.randint(1, 30):02d}"}
        events = [
            {
                "id": f"evt-{i}-{k}",
                "title": sentence(rng, 3),
                "start": f"{args['day']}T{rng.randint(7, 18):02d}:{rng.choice(['00', '30'])}:00Z",
                "attendees": [f"{rng.choice(WORDS)}@lumen.example" for _ in range(rng.randint(1, 4))],
                "description": sentence(rng, rng.randint(5, 25)),
            }
            for k in range(rng.randint(1, 12))
        ]
        body = {"day": args["day"], "events": events}
        return "calendar.list", args, ToolCallStatus.SUCCEEDED, "application/json", json.dumps(body).encode()
    args = {"path": f"docs/{rng.choice(WORDS)}/{rng.randint(1, 400)}.md"}
    paragraphs = [sentence(rng, rng.randint(12, 40)) for _ in range(rng.randint(2, 9))]
    text_ = f"# {args['path']}\n\n" + "\n\n".join(paragraphs)
    return "files.read", args, ToolCallStatus.SUCCEEDED, "text/markdown", text_.encode()


class ResultCache:
    """Tool results by index, derived and token-counted once and shared by every configuration."""

    def __init__(self, counter: Callable[[str], int], seed: int) -> None:
        self._counter = counter
        self._seed = seed
        self._items: list[ToolResult] = []
        self.build_seconds = 0.0

    def ensure(self, n: int) -> None:
        """Build results up to index ``n - 1``."""
        start = time.perf_counter()
        for i in range(len(self._items), n):
            rng = random.Random(self._seed * 1_000_003 + i)
            tool, args, status, content_type, payload = _payload(i, rng)
            draft = derive_memory(TOOLS[tool], PLACEHOLDER_ARTIFACT, args, status, payload, content_type=content_type,
                                  observed_at=T0,
                                  parse_max_bytes=8 * 1024 * 1024)
            self._items.append(ToolResult(
                tool=tool, arguments=args, status=status, content_type=content_type, payload=payload,
                sha256=hashlib.sha256(payload).hexdigest(), tokens=self._counter(decode_payload(payload)),
                draft=draft,
            ))
        self.build_seconds += time.perf_counter() - start

    def __getitem__(self, i: int) -> ToolResult:
        return self._items[i]
