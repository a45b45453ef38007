"""Faults against the real stack: runs complete once the fault clears, every artifact exactly once.

The part starts Postgres, S3, the Temporal dev server and a worker in a
private home of its own and keeps agent runs in flight: long turns
(``scripted:sleeper`` sleeping through a heartbeating ``diag.sleep``, and
``scripted:analyst`` listing, reading, aggregating and writing a report to S3)
and subagent batches (``scripted:researcher`` children, then the parent's
resume). While they run it injects, one at a time:

* ``worker_kill``: SIGKILL of the worker process in the middle of an activity
  (it waits until a tool call is open), then a new worker;
* ``postgres_restart``: the graph's Postgres stopped and started again;
* ``s3_outage``: S3 stopped for several seconds, then started again;
* ``temporal_restart``: the Temporal server stopped and started again.

A fault is **survived** when every run that was in flight while it happened
completes with an answer once the faults are over. Then the graph and the
bucket are counted: a settled tool call without exactly one artifact is
**lost** (none) or **duplicated** (several); an artifact whose object is
missing is lost; several rows for one call id, one memory per artifact or one
answer per model run are duplicates; objects no row accounts for (neither an
artifact's payload key nor a ``stored_objects`` record, which every tool write
commits before its put) are orphaned, a succeeded file handle without its
claimed record is unrecorded, and calls still open after every run ended are
dangling. Then a retention run past the unclaimed-object grace period sweeps
what failed calls wrote: after it every object must be an artifact's payload or
a claimed record, and no pending record may remain. Orphaned, unrecorded,
unswept and dangling all fail the run through ``details``.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from harness.harden.report import Figures
from harness.harden.stack import Stack, private_stack

PART = "faults"
QUICK_PLAN = ("worker_kill", "postgres_restart", "worker_kill", "s3_outage", "temporal_restart")
FULL_PLAN = (("worker_kill", "worker_kill", "postgres_restart", "worker_kill", "s3_outage", "worker_kill",
              "temporal_restart", "worker_kill") * 7)[:50]
#: Long turns and batches the faults hit, in rotation.
WORKLOADS = ("sleeper", "analyst", "subagents", "sleeper")


@dataclass
class Run:
    """One agent run in flight."""

    kind: str
    workflow_id: str
    started: float
    task: asyncio.Task | None = None
    ended: float | None = None
    ok: bool | None = None
    error: str = ""
    exposed_to: list[int] = field(default_factory=list)


async def _sql(stack: Stack, sql: str, **params: Any) -> list[Any]:
    """A query that rides out a restarting Postgres."""
    for attempt in range(60):
        try:
            async with stack.deps.sessions() as session:
                return list((await session.execute(text(sql), params)).all())
        except Exception:  # noqa: BLE001 - Postgres may be restarting under us; retry for up to a minute
            if attempt == 59:
                raise
            await asyncio.sleep(1)
    return []


async def _await_workflow(client: Any, workflow_id: str, deadline: float) -> tuple[bool, str]:
    """Wait for a workflow's result across Temporal restarts: (succeeded, why not)."""
    from temporalio.client import WorkflowFailureError

    while time.monotonic() < deadline:
        try:
            handle = client.get_workflow_handle(workflow_id)
            result = await asyncio.wait_for(handle.result(), timeout=max(1.0, deadline - time.monotonic()))
        except WorkflowFailureError as error:
            return False, f"workflow failed: {error.cause or error}"
        except TimeoutError:
            break
        except Exception:  # noqa: BLE001 - the server may be restarting: ask again
            await asyncio.sleep(1)
            continue
        status = getattr(result, "status", None)
        if status is not None and status != "answered":
            return False, f"ended with status {status}"
        return True, ""
    return False, "did not finish before the deadline"


class Harness:
    """The fault stack, its client and the runs in flight."""

    def __init__(self, stack: Stack, figures: Figures, progress: Callable[[str], None]) -> None:
        self.stack = stack
        self.figures = figures
        self.progress = progress
        self.runs: list[Run] = []
        self.account = ""
        self.client: Any = None
        self.dossier: Any = None
        self.worker_restarts = 0

    async def open(self) -> None:
        from dossier.client import DossierClient
        from dossier.runtime import temporal_client
        from store import conversations

        self.client = await temporal_client(self.stack.settings)
        async with self.stack.deps.sessions() as session, session.begin():
            self.account = await conversations.create_account(session, name="harden faults")
        self.dossier = DossierClient(deps=self.stack.deps, temporal=self.client, settings=self.stack.settings,
                                     account_id=self.account)
        self.dossier.poll_seconds = 0.5

    async def start(self, kind: str) -> Run:
        if kind == "sleeper":
            outcome = await self.dossier.chat("Please sleep 12 seconds.", model="scripted:sleeper", wait=False)
            run = Run(kind, outcome.workflow_id, time.monotonic())
        elif kind == "analyst":
            outcome = await self.dossier.chat("Which region drove Q3 2026 revenue? Write me a short report.",
                                              model="scripted:analyst", wait=False)
            run = Run(kind, outcome.workflow_id, time.monotonic())
        else:
            conversation, _ = await self.dossier.new_conversation("harden faults batch")
            task = asyncio.create_task(_quietly(self.dossier.subagents(
                "Audit Q3 across files.",
                [("scripted:researcher", "Analyse sales/2026-q3-orders.csv"),
                 ("scripted:researcher", "Analyse sales/2026-q2-orders.csv")],
                conversation_id=conversation)))
            workflow_id = await self._batch_workflow(conversation, task)
            run = Run(kind, workflow_id, time.monotonic(), task=task)
        self.runs.append(run)
        return run

    async def _batch_workflow(self, conversation: str, task: asyncio.Task) -> str:
        for _ in range(100):
            rows = await _sql(self.stack, "SELECT id FROM messages WHERE account_id=:a AND conversation_id=:c "
                                          "AND role='user' ORDER BY seq LIMIT 1", a=self.account, c=conversation)
            if rows:
                return f"subagents-{rows[0][0]}"
            if task.done():
                task.result()
            await asyncio.sleep(0.1)
        raise RuntimeError("the subagent batch wrote no message")

    def in_flight(self) -> list[Run]:
        return [run for run in self.runs if run.ended is None]

    async def settle(self, timeout: float) -> None:
        """Mark runs that finished; wait up to ``timeout`` for the rest."""
        deadline = time.monotonic() + timeout
        pending = self.in_flight()
        results = await asyncio.gather(*(_await_workflow(self.client, r.workflow_id, deadline) for r in pending))
        for run, (ok, why) in zip(pending, results, strict=True):
            run.ended, run.ok, run.error = time.monotonic(), ok, why

    async def reap(self) -> None:
        """Mark runs that already finished (without waiting)."""
        for run in self.in_flight():
            try:
                description = await asyncio.wait_for(self.client.get_workflow_handle(run.workflow_id).describe(), 5)
            except Exception:  # noqa: BLE001 - the server may be down: look again later
                continue
            if description.status is not None and description.status.name != "RUNNING":
                ok, why = await _await_workflow(self.client, run.workflow_id, time.monotonic() + 10)
                run.ended, run.ok, run.error = time.monotonic(), ok, why

    async def open_activity(self, timeout: float = 8.0) -> bool:
        """Wait until some tool call of the account is open (an activity is running)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = await _sql(self.stack, "SELECT count(*) FROM tool_calls WHERE account_id=:a AND status IN "
                                          "('pending', 'retrying')", a=self.account)
            if rows and rows[0][0]:
                return True
            await asyncio.sleep(0.2)
        return False

    # ------------------------------------------------------------------ faults

    async def inject(self, fault: str, quick: bool) -> None:
        from dossier.services import ensure_services
        from dossier.services.stack import stop_services
        from dossier.services.state import read_state

        settings = self.stack.settings
        if fault == "worker_kill":
            pid = int(read_state(settings.dossier_home)["worker"]["pid"])
            os.kill(pid, signal.SIGKILL)
            await _gone(pid)
        elif fault == "postgres_restart":
            await asyncio.to_thread(stop_services, settings, ("postgres",))
            await asyncio.sleep(2)
            await asyncio.to_thread(ensure_services, settings, ("postgres",))
        elif fault == "s3_outage":
            await asyncio.to_thread(stop_services, settings, ("s3",))
            await asyncio.sleep(5 if quick else 8)
            await asyncio.to_thread(ensure_services, settings, ("s3",))
        elif fault == "temporal_restart":
            await asyncio.to_thread(stop_services, settings, ("temporal",))
            await asyncio.sleep(1)
            await asyncio.to_thread(ensure_services, settings, ("temporal",))
        else:
            raise ValueError(fault)
        # The supervisor's part of recovery: a worker that is not running is started again.
        state = read_state(settings.dossier_home).get("worker") or {}
        if fault == "worker_kill" or not _alive(state.get("pid")):
            if fault != "worker_kill":
                self.worker_restarts += 1
            await asyncio.to_thread(ensure_services, settings, ("worker",))

    # ------------------------------------------------------------------ accounting

    async def count(self) -> dict[str, Any]:
        """Artifacts in Postgres and S3, exactly once per settled call."""
        a = self.account
        one = lambda sql: _sql(self.stack, sql, a=a)  # noqa: E731
        settled = await one("SELECT c.id, c.name, c.status, count(t.id) FROM tool_calls c LEFT JOIN tool_artifacts t "
                            "ON t.account_id=c.account_id AND t.tool_call_id=c.id WHERE c.account_id=:a "
                            "GROUP BY c.id, c.name, c.status")
        lost = [r for r in settled if r[2] == "succeeded" and r[3] == 0]
        duplicated = [r for r in settled if r[3] > 1]
        dangling = [r for r in settled if r[2] in ("pending", "retrying")]
        call_id_dups = await one("SELECT call_id, count(*) FROM tool_calls WHERE account_id=:a GROUP BY call_id "
                                 "HAVING count(*) > 1")
        answer_dups = await one("SELECT model_run_id, count(*) FROM messages WHERE account_id=:a AND role='assistant' "
                                "AND model_run_id IS NOT NULL GROUP BY model_run_id HAVING count(*) > 1")
        artifacts = await one("SELECT id, storage, storage_key, sha256 FROM tool_artifacts WHERE account_id=:a")
        keys = {r[2] for r in artifacts if r[1] != "inline" and r[2]}
        # The graph's own record of every object a tool call put: written before the put, claimed by the
        # capture of a succeeded result that refers to it (store.objects).
        stored = await one("SELECT key, state FROM stored_objects WHERE account_id=:a")
        claimed = {r[0] for r in stored if r[1] == "claimed"}
        recorded = {r[0] for r in stored}
        # Files a tool wrote (files.write) are referenced by the handle in its captured result: each one must
        # have its claimed record.
        handles = await one("SELECT inline_payload FROM tool_artifacts WHERE account_id=:a AND tool_name='files.write' "
                            "AND status='succeeded' AND storage='inline'")
        bucket = self.stack.endpoints.s3_bucket
        files = set()
        for (payload,) in handles:
            found = re.search(rf"s3://{re.escape(bucket)}/([^\"\s]+)", bytes(payload or b"").decode("utf-8", "replace"))
            if found:
                files.add(found.group(1))
        objects = await asyncio.to_thread(self._objects)
        missing = sorted((keys | claimed | files) - objects)
        # Orphaned: bytes no row accounts for (neither an artifact's payload key nor a stored-object record).
        orphaned = sorted(objects - keys - recorded)
        return {
            "tool_calls": len(settled), "artifacts_in_postgres": len(artifacts), "objects_in_s3": len(objects),
            "s3_artifacts": len(keys), "s3_files_written": len(files), "stored_object_rows": len(stored),
            "s3_objects_unclaimed": len((objects & recorded) - keys - claimed),
            "lost_calls": [r[0] for r in lost], "missing_objects": missing,
            "duplicated_calls": [r[0] for r in duplicated], "call_id_duplicates": [r[0] for r in call_id_dups],
            "answer_duplicates": [r[0] for r in answer_dups], "orphaned_objects": orphaned,
            "unrecorded_files": sorted(files - claimed),
            "dangling_calls": [f"{r[0]} ({r[1]}, {r[2]})" for r in dangling],
        }

    async def sweep(self) -> dict[str, Any]:
        """Run retention past the unclaimed-object grace period; then every object must be claimed or a payload.

        No built-in tool has a retention rule, so the run only sweeps what no succeeded result claimed.
        """
        from datetime import UTC, datetime, timedelta

        from dossier.retention import run_retention
        from policy.retention import UNCLAIMED_OBJECT_GRACE

        now = datetime.now(UTC) + UNCLAIMED_OBJECT_GRACE + timedelta(minutes=1)
        result = await run_retention(self.client, self.stack.settings.temporal_task_queue, now=now)
        a = self.account
        keys = {r[0] for r in await _sql(self.stack, "SELECT storage_key FROM tool_artifacts WHERE account_id=:a "
                                                     "AND storage_key IS NOT NULL", a=a)}
        claimed = {r[0] for r in await _sql(self.stack, "SELECT key FROM stored_objects WHERE account_id=:a "
                                                        "AND state='claimed'", a=a)}
        pending = await _sql(self.stack, "SELECT key FROM stored_objects WHERE account_id=:a AND state='pending'", a=a)
        objects = await asyncio.to_thread(self._objects)
        return {
            "objects_swept": result.actions.get("object:swept_object", 0),
            "unclaimed_after_sweep": sorted(objects - keys - claimed),
            "pending_rows_after_sweep": [r[0] for r in pending],
        }

    def _objects(self) -> set[str]:
        from dossier.services.s3 import client as s3_client

        e = self.stack.endpoints
        s3 = s3_client(e.s3_endpoint, e.s3_access_key, e.s3_secret_key, region=e.s3_region, secure=e.s3_secure)
        prefix = f"accounts/{self.account}/"
        for attempt in range(30):
            try:
                return {o.object_name for o in s3.list_objects(e.s3_bucket, prefix=prefix, recursive=True)}
            except Exception:  # noqa: BLE001 - S3 may be coming back
                if attempt == 29:
                    raise
                time.sleep(1)
        return set()


async def _quietly(coro: Any) -> Any:
    """The client's own wait on a batch: its result is read from Temporal instead, across restarts."""
    try:
        return await coro
    except Exception as error:  # noqa: BLE001 - the run's outcome is judged by _await_workflow
        return error


def _alive(pid: Any) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except OSError:
        return False
    try:  # a zombie is not alive
        with open(f"/proc/{int(pid)}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return False


async def _gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def run_faults(figures: Figures, *, quick: bool = False,
                     progress: Callable[[str], None] = lambda line: None) -> None:
    """The faults part, on a stack of its own: sets the four fault and artifact figures."""
    plan = QUICK_PLAN if quick else FULL_PLAN
    async with private_stack(("postgres", "s3", "temporal", "worker")) as stack:
        harness = Harness(stack, figures, progress)
        await harness.open()
        injected: list[tuple[str, list[str]]] = []
        for kind in ("sleeper", "subagents", "analyst"):  # a long turn, a subagent batch and a writing turn first
            await harness.start(kind)
        for index, fault in enumerate(plan):
            await harness.reap()
            while len(harness.in_flight()) < 2:
                await harness.start(WORKLOADS[len(harness.runs) % len(WORKLOADS)])
            mid_activity = await harness.open_activity()
            exposed = harness.in_flight()
            await harness.inject(fault, quick)
            for run in exposed:
                run.exposed_to.append(index)
            injected.append((fault, [r.workflow_id for r in exposed]))
            when = "mid-activity" if mid_activity else "between activities"
            progress(f"harden: fault {index + 1}/{len(plan)} {fault} ({when}) with {len(exposed)} run(s) in flight")
            await asyncio.sleep(1.0 if quick else 2.0)
        progress(f"harden: faults injected; waiting for {len(harness.in_flight())} run(s) to finish")
        await harness.settle(timeout=420)
        for run in harness.runs:
            if run.task is not None and not run.task.done():
                run.task.cancel()
        survived = 0
        failed_runs = {r.workflow_id: r for r in harness.runs if not r.ok}
        for index, (fault, workflow_ids) in enumerate(injected):
            broken = [w for w in workflow_ids if w in failed_runs]
            if broken:
                figures.finding(PART, f"fault {index + 1} ({fault}): run(s) did not complete after it cleared",
                                runs={w: failed_runs[w].error[:200] for w in broken[:3]})
            else:
                survived += 1
        counted = await harness.count()
        counted.update(await harness.sweep())
        lost = len(counted["lost_calls"]) + len(counted["missing_objects"])
        duplicated = len(counted["duplicated_calls"]) + len(counted["call_id_duplicates"]) \
            + len(counted["answer_duplicates"])
        for name in ("lost_calls", "missing_objects", "duplicated_calls", "call_id_duplicates", "answer_duplicates",
                     "orphaned_objects", "unrecorded_files", "unclaimed_after_sweep", "pending_rows_after_sweep",
                     "dangling_calls"):
            if counted[name]:
                figures.finding(PART, f"{name.replace('_', ' ')}: {len(counted[name])}", ids=counted[name][:5])
        figures.details["faults"] = {
            "plan": dict(sorted({f: plan.count(f) for f in plan}.items())),
            "runs": len(harness.runs), "runs_completed": sum(1 for r in harness.runs if r.ok),
            "worker_restarts_after_other_faults": harness.worker_restarts,
            **{k: (v if isinstance(v, int) else len(v)) for k, v in counted.items()},
        }
        figures.details["faults_orphaned_objects"] = len(counted["orphaned_objects"]) \
            + len(counted["unrecorded_files"]) + len(counted["unclaimed_after_sweep"]) \
            + len(counted["pending_rows_after_sweep"])
        figures.details["faults_dangling_calls"] = len(counted["dangling_calls"])
        figures.set(faults_injected=len(injected), faults_survived=survived, artifacts_lost=lost,
                    artifacts_duplicated=duplicated)
