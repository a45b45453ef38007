"""Record the workflow histories that ``tests/replay`` replays on every test run.

    .venv/bin/python -m harness.replay_histories [--out tests/replay/histories]

Starts what the integration tests start (the embedded Postgres and S3, in a
fresh database and bucket that are dropped afterwards, and an in-memory
Temporal dev server), runs an in-process worker and drives real sessions
through :class:`~dossier.client.DossierClient` with the offline scripted
models, one scenario per interesting path of the workflows in
:data:`workflows.ALL_WORKFLOWS` (:mod:`harness.replay_scenarios`). Then it walks every execution those
sessions made, children and continue-as-new runs included, and writes one
file per execution: the history exactly as ``WorkflowHistory.to_json()``
gives it. Replay needs the real workflow id (a parent's command to start a
child carries ``<parent id>/<suffix>``, and the replayer compares it with the
recorded event); the server records it in the first event
(``workflowExecutionStartedEventAttributes.workflowId``), which is where the
test reads it from.

File names hold only the workflow type and its place in the scenario
(``<Type>.<scenario>[.<child path>][.run-<n>].json``), never an id or a time,
so re-recording rewrites the same files. Worker and client identity and the
task queue are fixed for the same reason.

Re-record only when a workflow change is intentionally incompatible and
versioned (see tests/replay/README.md); never to make the replay test pass.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from minio.deleteobjects import DeleteObject
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import WorkflowExecutionStartedEventAttributes
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer
from temporalio.workflow import _Definition  # the registered name of a workflow class; no public accessor

from activities.providers.factory import ModelProviders
from dossier.client import DossierClient
from dossier.runtime import build_worker, open_graph
from dossier.services import ensure_services
from dossier.services.process import find_binary
from dossier.services.s3 import client as s3_client
from dossier.settings import Settings, with_database
from dossier.visibility import dev_server_args
from harness.replay_scenarios import SCENARIOS, TASK_QUEUE
from store import conversations
from workflows import ALL_WORKFLOWS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "replay" / "histories"

IDENTITY = "dossier-replay-recorder"
"""Client and worker identity in the histories (the default is ``pid@hostname``)."""
DEV_SERVER_ARGS = ("--dynamic-config-value", 'history.timerProcessorMaxTimeShift="10ms"', *dev_server_args())
"""Retry backoffs otherwise advance in ~1 s steps on the dev server."""

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CLOSED = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}


@dataclass(frozen=True)
class Recorded:
    """One workflow execution (one run) and the file it goes to."""

    name: str
    workflow_id: str
    workflow_type: str
    history: WorkflowHistory

    def to_json(self) -> str:
        """The file's content: the history JSON as the SDK writes it."""
        return self.history.to_json() + "\n"


# --------------------------------------------------------------------------- collecting the executions


async def _runs(temporal: Client, workflow_id: str) -> list[WorkflowHistory]:
    """Every run of a workflow id, first to last, each closed."""
    handle = temporal.get_workflow_handle(workflow_id)
    description = await handle.describe()
    if description.status == WorkflowExecutionStatus.RUNNING:
        raise RuntimeError(f"{workflow_id} is still running; only closed executions are recorded")
    runs = [await handle.fetch_history()]
    while previous := _started(runs[0]).continued_execution_run_id:
        runs.insert(0, await temporal.get_workflow_handle(workflow_id, run_id=previous).fetch_history())
    for history in runs:
        if history.events[-1].event_type not in _CLOSED:
            raise RuntimeError(f"{workflow_id}: a run ends with {EventType.Name(history.events[-1].event_type)}")
    return runs


def _started(history: WorkflowHistory) -> WorkflowExecutionStartedEventAttributes:
    first = history.events[0]
    if first.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        raise RuntimeError(f"{history.workflow_id}: history does not begin with its start")
    return first.workflow_execution_started_event_attributes


def _children(history: WorkflowHistory) -> list[str]:
    """Ids of the child workflows a run started, in the order it started them."""
    return [event.start_child_workflow_execution_initiated_event_attributes.workflow_id
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED]


def _child_path(parent_id: str, child_id: str, ordinal: int) -> str:
    """The child's place under its parent: the id suffix, with any uuid in it replaced by its ordinal."""
    suffix = child_id.removeprefix(f"{parent_id}/") if child_id.startswith(f"{parent_id}/") else f"child-{ordinal}"
    return _UUID.sub(str(ordinal), suffix).replace("/", ".")


async def collect(temporal: Client, workflow_id: str, path: str) -> list[Recorded]:
    """The execution tree under ``workflow_id``: every run of it and of every child, named by ``path``."""
    runs = await _runs(temporal, workflow_id)
    recorded: list[Recorded] = []
    for number, history in enumerate(runs, start=1):
        started = _started(history)
        if started.workflow_id != workflow_id:  # the replay test reads the id from here
            raise RuntimeError(f"{workflow_id}: the server did not record the workflow id in its start event")
        workflow_type = started.workflow_type.name
        name = f"{workflow_type}.{path}" + (f".run-{number}" if len(runs) > 1 else "")
        recorded.append(Recorded(name=name, workflow_id=workflow_id, workflow_type=workflow_type, history=history))
        for ordinal, child_id in enumerate(_children(history), start=1):
            recorded.extend(await collect(temporal, child_id, f"{path}.{_child_path(workflow_id, child_id, ordinal)}"))
    return recorded


# --------------------------------------------------------------------------- the stack


@asynccontextmanager
async def _fresh_settings(settings: Settings) -> AsyncIterator[Settings]:
    """Settings for a fresh database and bucket on the embedded Postgres and S3, both removed afterwards."""
    endpoints = await asyncio.to_thread(ensure_services, settings, ("postgres", "s3"))
    assert endpoints.database_url is not None and endpoints.s3_endpoint is not None
    suffix = uuid.uuid4().hex[:12]
    database, bucket = f"dossier_replay_{suffix}", f"dossier-replay-{suffix}"
    admin = await asyncpg.connect(endpoints.database_url)
    try:
        await admin.execute(f'CREATE DATABASE "{database}"')
    finally:
        await admin.close()
    s3 = s3_client(endpoints.s3_endpoint, endpoints.s3_access_key, endpoints.s3_secret_key,
                   region=endpoints.s3_region, secure=endpoints.s3_secure)
    try:
        yield settings.model_copy(update={
            "database_url": with_database(endpoints.database_url, database), "s3_bucket": bucket})
    finally:
        if s3.bucket_exists(bucket):
            doomed = (DeleteObject(o.object_name) for o in s3.list_objects(bucket, recursive=True))
            for error in s3.remove_objects(bucket, doomed):
                print(f"could not delete {error.name} from {bucket}: {error}", file=sys.stderr)
            s3.remove_bucket(bucket)
        admin = await asyncpg.connect(endpoints.database_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        finally:
            await admin.close()


async def record(settings: Settings, names: list[str]) -> list[Recorded]:
    """Run the named scenarios against a fresh stack and return every execution they made, replay-checked."""
    recorded: list[Recorded] = []
    async with _fresh_settings(settings) as fresh, open_graph(fresh) as deps:
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(find_binary("temporal")), data_converter=pydantic_data_converter,
            ui=False, identity=IDENTITY, dev_server_extra_args=list(DEV_SERVER_ARGS))
        try:
            async with deps.sessions() as session, session.begin():
                account_id = await conversations.create_account(session, name="replay histories")
            dossier = DossierClient(deps=deps, temporal=env.client,
                                    settings=fresh.model_copy(update={"temporal_task_queue": TASK_QUEUE}),
                                    account_id=account_id, poll_seconds=0.2)
            worker = build_worker(env.client, deps, task_queue=TASK_QUEUE, workflow_failure_exception_types=[Exception],
                                  providers=ModelProviders())
            async with worker:
                for name in names:
                    began = time.monotonic()
                    workflow_id = await SCENARIOS[name](dossier, env.client)
                    executions = await collect(env.client, workflow_id, name)
                    print(f"{name}: {len(executions)} execution(s) in {time.monotonic() - began:.1f}s", flush=True)
                    recorded.extend(executions)
        finally:
            await env.shutdown()
    replayer = Replayer(workflows=ALL_WORKFLOWS, data_converter=pydantic_data_converter)
    for execution in recorded:
        # Exactly what the test will do: from the file's JSON, not from the fetched object.
        text = execution.to_json()
        first = json.loads(text)["events"][0]["workflowExecutionStartedEventAttributes"]
        await replayer.replay_workflow(WorkflowHistory.from_json(first["workflowId"], text))
    return recorded


def write(recorded: list[Recorded], out: Path, scenarios: list[str]) -> None:
    """Write one file per execution, replacing every earlier file of the ``scenarios`` recorded."""
    names = [execution.name for execution in recorded]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise RuntimeError(f"two executions map to the same file: {duplicates}")
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.json"):
        # <Type>.<scenario>[...].json: a scenario that now makes fewer executions leaves no stale file,
        # and a file kept under another name (a pre-patch history, see the README) is left alone.
        if stale.name.split(".")[1] in scenarios:
            stale.unlink()
    for execution in recorded:
        (out / f"{execution.name}.json").write_text(execution.to_json())


def workflow_types() -> set[str]:
    """The registered names of the workflows in ``ALL_WORKFLOWS``."""
    return {_Definition.must_from_class(cls).name for cls in ALL_WORKFLOWS}


async def _main(args: argparse.Namespace) -> int:
    scenarios = args.scenario or list(SCENARIOS)
    recorded = await record(Settings(), scenarios)
    missing = workflow_types() - {r.workflow_type for r in recorded}
    if missing and not args.scenario:
        raise RuntimeError(f"no scenario ran these workflow types: {sorted(missing)}")
    write(recorded, args.out, scenarios)
    total = 0
    for execution in sorted(recorded, key=lambda r: r.name):
        size = (args.out / f"{execution.name}.json").stat().st_size
        total += size
        print(f"{size:>8}  {execution.name}.json")
    print(f"{total:>8}  total, {len(recorded)} histories in {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Record the histories; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m harness.replay_histories", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="folder of the history files (default: %(default)s)")
    parser.add_argument("--scenario", action="append", choices=list(SCENARIOS),
                        help="record only this scenario (repeatable); other scenarios' files are kept")
    args = parser.parse_args(argv)
    # The flaky and sleeper scenarios fail and cancel activities on purpose; each scenario checks its outcome.
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)
    status = asyncio.run(_main(args))
    # The SDK's runtime can abort at interpreter exit right after a dev server shut down
    # (temporalio/sdk-python#300): give its threads a moment first.
    time.sleep(1)
    return status


__all__ = ["DEFAULT_OUT", "Recorded", "collect", "main", "record", "workflow_types", "write"]


if __name__ == "__main__":
    sys.exit(main())
