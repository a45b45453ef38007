"""Run the hardening suite's parts and collect their figures.

Parts: isolation, taint (helper module ``harness.harden.taint``), untrusted,
injection, fuzz, bad_input, retention, branches, faults. Each runs against a private embedded stack
(:mod:`harness.harden.stack`); the faults part gets a stack of its own because
it kills and restarts services. A part that fails to import or raises leaves
its figures ``None`` and its error in the report: it is never counted as passed.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
import traceback
from collections.abc import Callable
from typing import Any

from harness.harden.report import Figures
from harness.harden.stack import Stack, private_stack

PARTS = ("isolation", "taint", "untrusted", "injection", "fuzz", "bad_input", "retention", "branches", "faults")
#: Parts that share one stack with Temporal (the CLI needs it); faults start their own.
SHARED_STACK_PARTS = ("isolation", "injection", "fuzz", "bad_input", "retention", "branches")


async def _taint(figures: Figures, quick: bool) -> None:
    """Helper C's property part: ``harness.harden.taint`` returns (taint_cases, taint_violations)."""
    module = importlib.import_module("harness.harden.taint")
    candidates = [getattr(module, name) for name in ("run_taint", "taint_figures", "run", "main")
                  if callable(getattr(module, name, None))]
    if not candidates:
        raise RuntimeError("harness.harden.taint has no run_taint/taint_figures/run function")
    fn = candidates[0]
    kwargs = {"quick": quick} if "quick" in inspect.signature(fn).parameters else {}
    if inspect.iscoroutinefunction(fn):
        result = await fn(**kwargs)
    else:  # a synchronous part may run its own event loop: keep it off this one
        result = await asyncio.to_thread(fn, **kwargs)
    if isinstance(result, dict):
        cases, violations = result["taint_cases"], result["taint_violations"]
    else:
        cases, violations = result[0], result[1]
    figures.set(taint_cases=cases, taint_violations=violations)


async def run_harden(*, quick: bool, parts: tuple[str, ...] = PARTS,
                     progress: Callable[[str], None] = lambda line: None) -> Figures:
    """Run the selected parts; returns the figures (missing ones stay ``None``)."""
    figures = Figures(quick=quick)

    async def timed(name: str, run: Callable[[], Any]) -> None:
        began = time.monotonic()
        progress(f"harden: {name} ...")
        try:
            await run()
        except Exception as error:  # a part that breaks is reported, never counted as passed
            figures.errors[name] = f"{type(error).__name__}: {error}"
            progress(traceback.format_exc())
        figures.seconds[name] = time.monotonic() - began
        progress(f"harden: {name} done in {figures.seconds[name]:.0f}s")

    if "taint" in parts:
        await timed("taint", lambda: _taint(figures, quick))
    if "untrusted" in parts:  # pure: no services
        async def untrusted() -> None:
            importlib.import_module("harness.harden.untrusted").run_untrusted(figures, quick=quick, progress=progress)
        await timed("untrusted", untrusted)

    shared = [p for p in SHARED_STACK_PARTS if p in parts]
    if shared:
        began = time.monotonic()
        progress("harden: starting a private stack (Postgres, S3, Temporal) ...")
        try:
            async with private_stack(("postgres", "s3", "temporal")) as stack:
                progress(f"harden: stack up in {time.monotonic() - began:.0f}s at {stack.settings.dossier_home}")
                for name in shared:
                    await timed(name, lambda n=name: _part(n, stack, figures, quick, progress))
        except Exception as error:  # the stack itself did not start
            for name in shared:
                figures.errors.setdefault(name, f"stack: {type(error).__name__}: {error}")
            progress(traceback.format_exc())

    if "faults" in parts:
        async def faults() -> None:
            module = importlib.import_module("harness.harden.faults")
            await module.run_faults(figures, quick=quick, progress=progress)
        await timed("faults", faults)
    return figures


async def _part(name: str, stack: Stack, figures: Figures, quick: bool, progress: Callable[[str], None]) -> None:
    module = importlib.import_module(f"harness.harden.{name}")
    run = getattr(module, f"run_{name}")
    kwargs: dict[str, Any] = {"quick": quick}
    if "progress" in inspect.signature(run).parameters:
        kwargs["progress"] = progress
    await run(stack, figures, **kwargs)


def run(quick: bool, parts: tuple[str, ...] = PARTS, progress: Callable[[str], None] = lambda line: None) -> Figures:
    """Synchronous entry point for the command."""
    return asyncio.run(run_harden(quick=quick, parts=parts, progress=progress))
