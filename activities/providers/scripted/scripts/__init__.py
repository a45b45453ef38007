"""The scripted models, by name: ``scripted:<name>`` runs ``SCRIPTS[<name>]``.

Each script is a small state machine over the assembled context (see
:mod:`activities.providers.scripted.scripts.steps`); none keeps state of its own, so
the same context always gets the same reply.
"""

from __future__ import annotations

from types import MappingProxyType

from activities.providers.scripted.scripts.analysis import analyst, digest, researcher
from activities.providers.scripted.scripts.conversation import coordinator, echo, panelist, picker
from activities.providers.scripted.scripts.diagnostics import flaky, sleeper
from activities.providers.scripted.scripts.steps import Script

SCRIPTS: MappingProxyType[str, Script] = MappingProxyType({
    "analyst": analyst,
    "coordinator": coordinator,
    "digest": digest,
    "echo": echo,
    "flaky": flaky,
    "panelist": panelist,
    "picker": picker,
    "researcher": researcher,
    "sleeper": sleeper,
})
"""Script name -> script; read-only, so no caller can change what a name means."""

__all__ = ["SCRIPTS"]
