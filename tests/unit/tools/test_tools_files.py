"""``files.write`` without a live S3: name rules, content types and how store failures are sorted.

The successful upload, against real S3, is in ``tests/integration/test_tools_s3.py``.
"""

from __future__ import annotations

import hashlib

import pytest

from activities.tools.base import ToolArgumentError, ToolContext, ToolError, ToolExecutionError
from activities.tools.files import check_file_name, content_type_for
from dossier.runtime import SAMPLE_WORKSPACE
from policy.enums import PrivacyClass
from store.artifacts import ArtifactStore, ObjectRef


@pytest.mark.parametrize("name", ["report.md", "Q3 revenue by region.md", "export_2026-11.csv", "a"])
def test_plain_file_names_are_accepted(name):
    assert check_file_name(name) == name


@pytest.mark.parametrize("name", [
    "", "../report.md", "reports/q3.md", "/tmp/x.md", ".env", "report.md.", "report ", "a\\b.md",
    "x" * 128, "tab\there.md", "new\nline.md", "..",
])
def test_anything_but_a_plain_file_name_is_refused(name):
    with pytest.raises(ToolArgumentError, match="invalid file name"):
        check_file_name(name)


@pytest.mark.parametrize(("name", "content_type"), [
    ("r.md", "text/markdown; charset=utf-8"),
    ("R.MD", "text/markdown; charset=utf-8"),
    ("t.csv", "text/csv; charset=utf-8"),
    ("d.json", "application/json"),
    ("notes", "text/plain; charset=utf-8"),
    ("x.bin", "text/plain; charset=utf-8"),
])
def test_content_types_do_not_depend_on_the_host(name, content_type):
    assert content_type_for(name) == content_type


def _context(artifacts: ArtifactStore | None, recorded: list[ObjectRef] | None = None) -> ToolContext:
    async def record(ref: ObjectRef, privacy: PrivacyClass) -> None:
        assert recorded is not None
        recorded.append(ref)

    return ToolContext(account_id="acct-files", tool_call_id="tc-1", attempt=1, workspace=SAMPLE_WORKSPACE,
                       artifacts=artifacts, record_object=record if recorded is not None else None)


async def test_without_object_storage_the_write_fails(registry):
    with pytest.raises(ToolExecutionError, match="needs object storage"):
        await registry.execute("files.write", _context(None), {"name": "r.md", "content": "# R\n"})


async def test_a_bad_name_fails_before_any_upload(registry):
    with pytest.raises(ToolArgumentError, match="invalid file name"):
        await registry.execute("files.write", _context(None), {"name": "../r.md", "content": "x"})


async def test_an_unreachable_store_is_a_retryable_failure_and_the_write_was_recorded_first(registry):
    # Port 1 on loopback refuses connections at once: S3 being down, without a network.
    store = ArtifactStore(endpoint="127.0.0.1:1", access_key="k", secret_key="s", bucket="dossier-artifacts")
    recorded: list[ObjectRef] = []
    with pytest.raises(ToolExecutionError, match=r"could not store r\.md") as caught:
        await registry.execute("files.write", _context(store, recorded), {"name": "r.md", "content": "# R\n"})
    assert caught.value.retryable is True
    # The put was attempted only after the graph had the record (the put may have reached S3).
    digest = hashlib.sha256("# R\n".encode()).hexdigest()
    assert [ref.key for ref in recorded] == [f"accounts/acct-files/sha256/{digest}"]


async def test_without_a_graph_to_record_in_nothing_is_uploaded(registry):
    store = ArtifactStore(endpoint="127.0.0.1:1", access_key="k", secret_key="s", bucket="dossier-artifacts")
    with pytest.raises(ToolError, match="needs the runtime graph") as caught:
        await registry.execute("files.write", _context(store), {"name": "r.md", "content": "# R\n"})
    assert caught.value.retryable is False  # not "could not store": no request was made


async def test_content_over_the_store_limit_is_permanent(registry):
    store = ArtifactStore(endpoint="127.0.0.1:1", access_key="k", secret_key="s", bucket="dossier-artifacts",
                          max_payload_bytes=4)
    with pytest.raises(ToolArgumentError, match="too large"):
        await registry.execute("files.write", _context(store), {"name": "r.md", "content": "more than four bytes"})
