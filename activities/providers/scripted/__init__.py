"""The scripted provider: deterministic, offline models that read the assembled context.

``scripted:<name>`` runs the script ``<name>`` (see
:data:`activities.providers.scripted.scripts.SCRIPTS`). A script sees exactly what a
real model would: the provider messages and the offered tools. It parses the
runtime system message and the transcript, finds which of its steps are done
(their results, receipts or open calls are in view) and takes the next one,
so a script that reaches its answer shows the assembly carried what it needed.

No randomness, no clock, no I/O: the same request gives the same response.
Tool-call ids derive from the model run id (``call_<run_id[:8]>_<i>``), so a
retried model call produces the same ids and captures stay idempotent.
"""

from __future__ import annotations

from activities.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderError,
    UnknownModelError,
    derived_call_id,
)
from activities.providers.scripted.context import read_context
from activities.providers.scripted.lines import cite_only_shown
from activities.providers.scripted.scripts import SCRIPTS
from activities.providers.scripted.scripts.steps import Script, Turn
from activities.tools.registry import canonical_name
from policy.records import ToolCallRequest


def call_id(run_id: str, index: int) -> str:
    """The id of the ``index``-th tool call a scripted run makes."""
    return derived_call_id(run_id, index)


def offered_tools(tools: tuple[dict, ...]) -> frozenset[str]:
    """Canonical names of the OpenAI tool entries in a request.

    Raises:
        ProviderError: an entry that is not an OpenAI function tool.
    """
    names = set()
    for entry in tools:
        function = entry.get("function") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or entry.get("type") != "function" or not isinstance(function, dict) \
                or not isinstance(function.get("name"), str):
            raise ProviderError(f"malformed tool entry in the request: {entry!r}")
        names.add(canonical_name(function["name"]))
    return frozenset(names)


class ScriptedProvider:
    """The ``scripted`` model provider."""

    name = "scripted"

    def check_model(self, model: str) -> Script:
        """The script called ``model``.

        Raises:
            UnknownModelError: no such script.
        """
        try:
            return SCRIPTS[model]
        except KeyError:
            known = ", ".join(sorted(SCRIPTS))
            raise UnknownModelError(f"no scripted model {model!r}; scripted models: {known}") from None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Run the script on the request's context.

        Raises:
            UnknownModelError: the request names no known script.
            ProviderError: a malformed tool entry.
        """
        script = self.check_model(request.model)
        turn = Turn(view=read_context(request.messages), participant=request.participant_name,
                    offered=offered_tools(request.tools))
        reply = script(turn)
        calls = tuple(
            ToolCallRequest(call_id=call_id(request.run_id, index), name=planned.tool, arguments=planned.arguments)
            for index, planned in enumerate(reply.calls)
        )
        # The answer cites what the context cites; a look-alike it quotes from data stays data.
        text = cite_only_shown(reply.text, turn.view.cited) if reply.text else reply.text
        return ModelResponse(text=text, tool_calls=calls)


__all__ = ["ScriptedProvider", "call_id", "offered_tools"]
