"""What the client hands back: a turn by its ids and answer, a model run as `dossier runs` lists it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contracts import TurnResult

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
"""The provider-reported usage of a run, as ``dossier runs --json`` shows it."""


@dataclass(frozen=True)
class TurnOutcome:
    """One finished (or started) turn, by id, with its answer text."""

    conversation_id: str
    branch_id: str
    participant_id: str
    participant: str
    workflow_id: str
    ui_url: str | None
    result: TurnResult | None = None
    answer: str | None = None

    @property
    def model_run_ids(self) -> tuple[str, ...]:
        """The model runs of the turn."""
        return self.result.model_run_ids if self.result else ()


@dataclass(frozen=True)
class RunRow:
    """One model run, as ``dossier runs`` lists it."""

    model_run_id: str
    workflow_id: str | None
    runtime_kind: str
    conversation_id: str
    branch_id: str
    participant: str
    context_assembly_id: str | None
    status: str
    legacy_tokens: int | None = None
    assembled_tokens: int | None = None
    """Dossier's own count of the context it sent (tiktoken), next to the provider's ``usage``."""
    ui_url: str | None = None
    started_at: str = ""
    model: str | None = None
    """The model spec the run used (``openai:gpt-4o-mini``, ``scripted:analyst``)."""
    usage: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS))
    """Tokens as the provider reported them: :data:`USAGE_KEYS`, each ``None`` when not reported."""
    seconds: float | None = None
    """From the run's start to its finish (assembly and the model call), once finished."""

    def to_json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {**self.__dict__, "usage": dict(self.usage)}


def run_usage(stored: dict[str, Any] | None) -> dict[str, int | None]:
    """A run's stored usage as :data:`USAGE_KEYS` (runs recorded before them kept only ``prompt_tokens``)."""
    stored = stored or {}
    usage = {key: stored.get(key) for key in USAGE_KEYS}
    if usage["input_tokens"] is None and isinstance(stored.get("prompt_tokens"), int):
        usage["input_tokens"] = stored["prompt_tokens"]
    return usage


__all__ = ["USAGE_KEYS", "RunRow", "TurnOutcome", "run_usage"]
