"""How large a model's context window is, and the assembly budget that follows from it.

One policy budget for every model is wrong both ways: a 1.5B local model served with an 8k window gets a
context as large as its whole window (no room left for the tool schemas and the answer), and a 200k-window
hosted model gets a context cut to 8k, restarting its cache epoch every few calls. A participant whose agent
sets no ``token_budget`` is given :data:`WINDOW_SHARE` of its model's window, at most :data:`MAX_BUDGET`.
"""

from __future__ import annotations

from dataclasses import dataclass

WINDOW_SHARE = 0.5
"""The share of the window the assembled context may take; the rest holds tool schemas and the answer."""
MAX_BUDGET = 32_768
"""The largest budget the traces benchmark has measured (bench-results/traces-coding.md: at 32k the
coding-agent runs keep 99.9% of carried references for 0.645 of cached replay); larger ones are unmeasured."""

HOSTED_WINDOWS: tuple[tuple[str, int], ...] = (
    # (model name prefix, window in tokens), longest prefix first within a family, from the vendors' model pages.
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
    ("gemini-", 1_048_576),
)


@dataclass(frozen=True)
class ContextWindows:
    """Model -> context window, for the providers this installation knows; built by the composition root,
    which knows the local model server's window (``DOSSIER_LOCAL_MODEL_CONTEXT``)."""

    local_window: int | None = None
    """The local model server's context size; ``None``: not known here."""

    def window(self, provider: str | None, model: str | None) -> int | None:
        """The model's window in tokens; ``None`` for a model not known here (the policy's budget applies)."""
        if provider == "local":
            return self.local_window
        name = (model or "").lower().rsplit("/", 1)[-1]
        for prefix, tokens in HOSTED_WINDOWS:
            if name.startswith(prefix):
                return tokens
        return None

    def budget(self, provider: str | None, model: str | None) -> int | None:
        """The assembly budget a participant of this model gets when its agent sets none."""
        window = self.window(provider, model)
        return None if window is None else min(int(window * WINDOW_SHARE), MAX_BUDGET)
