"""User memories through the client and `dossier memory add|list|forget`: account scoped, bad input refused.

Each account sees and deletes only its own memories: another account's id reads exactly like an id
that never existed, from the client and from the command line (two DOSSIER_HOMEs are two accounts).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_inprocess import run_cli
from temporalio.testing import WorkflowEnvironment

from activities.deps import GraphDeps
from dossier.client import ClientError, DossierClient, InvalidInputError
from dossier.services.models import Endpoints
from dossier.settings import Settings
from store import conversations

pytestmark = pytest.mark.integration


async def _client(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> DossierClient:
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="memory test")
    return DossierClient(deps=graph_deps, temporal=temporal_env.client, settings=Settings(), account_id=account_id)


async def test_memories_are_added_listed_and_forgotten_per_account(temporal_env: WorkflowEnvironment,
                                                                   graph_deps: GraphDeps) -> None:
    mine, theirs = await _client(temporal_env, graph_deps), await _client(temporal_env, graph_deps)
    first = await mine.memories.add("Prefers amounts in EUR.")
    second = await mine.memories.add("Works in the Benelux sales team.")
    await theirs.memories.add("Prefers USD.")

    assert [m.text for m in await mine.memories.list()] == ["Prefers amounts in EUR.",
                                                            "Works in the Benelux sales team."]
    assert [m.text for m in await theirs.memories.list()] == ["Prefers USD."]
    # Another account cannot forget mine, and is told exactly what an unknown id gets.
    with pytest.raises(ClientError) as foreign:
        await theirs.memories.forget(first.id)
    with pytest.raises(ClientError) as unknown:
        await theirs.memories.forget(missing := str(uuid.uuid4()))
    assert str(foreign.value).replace(first.id, "ID") == str(unknown.value).replace(missing, "ID")
    assert [m.id for m in await mine.memories.list()] == [first.id, second.id]

    await mine.memories.forget(first.id)
    assert [m.id for m in await mine.memories.list()] == [second.id]
    with pytest.raises(ClientError):
        await mine.memories.forget(first.id)  # already gone


@pytest.mark.parametrize("text", ["", "   ", "nul\x00byte", "x" * (Settings().message_max_bytes + 1)])
async def test_bad_memory_text_is_refused_and_writes_nothing(temporal_env: WorkflowEnvironment,
                                                             graph_deps: GraphDeps, text: str) -> None:
    client = await _client(temporal_env, graph_deps)
    with pytest.raises(InvalidInputError):
        await client.memories.add(text)
    assert await client.memories.list() == []


async def test_a_malformed_memory_id_is_a_typed_error(temporal_env: WorkflowEnvironment,
                                                     graph_deps: GraphDeps) -> None:
    client = await _client(temporal_env, graph_deps)
    with pytest.raises(InvalidInputError):
        await client.memories.forget("not-an-id")


@pytest.fixture
def cli(tmp_path: Path, database_url: str, endpoints: Endpoints, s3_bucket: str,
        temporal_env: WorkflowEnvironment) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``dossier memory ARGS`` on the session's services, in the account of DOSSIER_HOME ``home`` (in-process)."""
    base = {
        **os.environ,
        "DATABASE_URL": database_url,
        "S3_ENDPOINT": endpoints.s3_endpoint,
        "S3_ACCESS_KEY": endpoints.s3_access_key or "",
        "S3_SECRET_KEY": endpoints.s3_secret_key or "",
        "S3_REGION": endpoints.s3_region,
        "S3_BUCKET": s3_bucket,
        "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
    }

    def run(home: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**base, "DOSSIER_HOME": str(tmp_path / home)}
        done = run_cli(["memory", *args], env=env, cwd=tmp_path)
        return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())

    return run


def test_the_memory_command_is_scoped_to_its_account(cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    added = cli("alice", "add", "Prefers amounts in EUR.")
    assert added.returncode == 0, added.stderr
    memory_id = added.stdout.split()[-1]
    listed = json.loads(cli("alice", "list", "--json").stdout)
    assert [(m["id"], m["text"]) for m in listed] == [(memory_id, "Prefers amounts in EUR.")]

    # Bob (another DOSSIER_HOME, another account) neither lists nor forgets it.
    assert json.loads(cli("bob", "list", "--json").stdout) == []
    refused = cli("bob", "forget", memory_id)
    assert refused.returncode == 2 and refused.stderr.startswith("dossier: error: no memory")
    assert len(json.loads(cli("alice", "list", "--json").stdout)) == 1

    empty = cli("alice", "add", "")
    assert empty.returncode == 2 and empty.stderr.count("\n") == 1 and "dossier: error:" in empty.stderr
    assert cli("alice", "forget", memory_id).returncode == 0
    assert cli("alice", "list").stdout.strip() == "no memories"
