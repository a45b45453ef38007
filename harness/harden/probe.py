"""Probing a read path with another account's id: denied when it answers exactly as for an unknown id.

The isolation part (:mod:`harness.harden.isolation`) probes the store, S3,
assembly, client, audit and CLI paths; :mod:`harness.harden.isolation_inspector`
the inspector's pages. Both count attempts and denials through one :class:`Prober`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from harness.harden.report import Figures

PART = "isolation"


@dataclass
class AccountIds:
    """Every id one account's graph holds, by kind."""

    account: str
    ids: dict[str, list[Any]] = field(default_factory=dict)

    def first(self, kind: str) -> Any:
        return self.ids[kind][0] if self.ids.get(kind) else None


def _blank(value: str, ids: list[str]) -> str:
    for one in sorted((i for i in ids if i), key=len, reverse=True):
        value = value.replace(one, "<ID>").replace(one[:8], "<ID>")
    return re.sub(r"0x[0-9a-f]+", "0x?", value)


Outcome = tuple[str, str]


async def _outcome(call: Callable[[], Awaitable[Any]], ids: list[str]) -> Outcome:
    try:
        result = await call()
    except Exception as error:  # the outcome under test: any exception is compared, not judged
        return (f"error:{type(error).__name__}", _blank(str(error), ids))
    return ("ok", _blank(_normal(result), ids))


def _normal(result: Any) -> str:
    """A comparable rendering of a result: model dumps without volatile fields."""
    if result is None:
        return "None"
    if isinstance(result, (list, tuple)):
        return "[" + ", ".join(_normal(r) for r in result) + "]"
    if hasattr(result, "model_dump"):
        return repr(sorted(result.model_dump(mode="json").items()))
    if isinstance(result, bytes):
        return f"bytes[{len(result)}]"
    return repr(result)


@dataclass
class Prober:
    """Counts attempts and denials; every undenied attempt becomes a finding."""

    figures: Figures
    attempts: int = 0
    denied: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)

    async def attempt(self, path: str, foreign_id: Any, unknown_id: Any,
                      call: Callable[[Any], Awaitable[Any]], *, mode: str = "",
                      leak_check: Callable[[Any], bool] | None = None) -> bool:
        """Call ``call`` with a foreign id and with an unknown one; denied when indistinguishable."""
        ids = [str(x) for x in _flatten(foreign_id) + _flatten(unknown_id)]
        foreign = await _outcome(lambda: call(foreign_id), ids)
        unknown = await _outcome(lambda: call(unknown_id), ids)
        self.attempts += 1
        ok = foreign == unknown
        if ok and leak_check is not None:
            try:
                ok = not leak_check(await call(foreign_id))
            except Exception:  # noqa: BLE001 - raising again is the denial already compared above
                ok = True
        if ok:
            self.denied += 1
        else:
            self.figures.finding(PART, f"{path} is not denied like an unknown id", mode=mode,
                                 foreign=str(foreign)[:300], unknown=str(unknown)[:300],
                                 id=str(foreign_id)[:120])
        self.log.append({"path": path, "mode": mode, "denied": ok})
        return ok


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _ids_of(account: AccountIds, kind: str) -> list[Any]:
    rows = account.ids.get("tool_call" if kind == "call_id" else kind, [])
    out = []
    for row in rows:
        if kind == "call_id":
            out.append(row[1])
        elif kind == "tool_call":
            out.append(row[0])
        elif kind in ("branch", "participant", "artifact", "user_memory") and isinstance(row, tuple):
            out.append(row[1] if kind in ("branch", "participant") else row[0])
        else:
            out.append(row)
    return out
