"""``files.write``: save a generated file to object storage and return its handle.

The content goes to the artifact store, content-addressed under the account's
prefix (``accounts/<account>/sha256/<hex>``), so a retried write uploads
nothing new and returns the same handle. The result is a file handle
``{"name", "bytes", "sha256", "uri"}`` with content type
:data:`policy.derive.FILE_CONTENT_TYPE`: derivation turns it into a permanent
memory ("generated file report.md, 512 bytes at s3://...") that a parent
may receive from a subagent by promotion.

The write is recorded in the graph before the put (:attr:`ToolContext.record_object`,
``store.objects``): a put whose call then fails leaves a record the retention
sweep removes, never bytes nothing in the graph names. The result lists the
object (:attr:`ToolResult.objects`), so the capture of the succeeded call claims
the record in the artifact's own transaction.

The file's privacy class is the call's (:attr:`ToolContext.privacy`): its
content is the model's arguments, which carry the strictest class of what the
model was shown (:func:`store.tools.record_tool_call`). The spec's ``user`` is
only the floor.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Any

from activities.tools.base import (
    RegisteredTool,
    ToolArgumentError,
    ToolContext,
    ToolError,
    ToolExecutionError,
    ToolResult,
)
from policy.derive import FILE_CONTENT_TYPE
from policy.enums import FreshnessClass, PrivacyClass
from policy.tools import ToolSpec
from store.errors import ArtifactStoreError, PayloadTooLargeError, StoreError

MAX_CONTENT_CHARS = 1_000_000
"""A generated file is a report or an export, not a dump."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ -]{0,126}")

# Explicit, not mimetypes.guess_type: that one reads the host's mime.types, so the
# stored content type would differ between machines.
_CONTENT_TYPES = {
    ".md": "text/markdown; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
}


def check_file_name(name: str) -> str:
    """A plain file name: no folders, no leading dot, no control characters.

    Args:
        name: the name the model chose.

    Raises:
        ToolArgumentError: anything that is not a plain file name.
    """
    if not _NAME.fullmatch(name) or name != PurePosixPath(name).name or name.endswith((".", " ")):
        raise ToolArgumentError(
            f"invalid file name {name!r}: use a plain name like 'q3-report.md' "
            "(letters, digits, '.', '_', '-', spaces; no folders)"
        )
    return name


def content_type_for(name: str) -> str:
    """The stored object's content type, from the file name's extension."""
    return _CONTENT_TYPES.get(PurePosixPath(name).suffix.lower(), "text/plain; charset=utf-8")


async def write_file(context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``files.write``: record the write, upload the content, return the file handle."""
    name = check_file_name(arguments["name"])
    data = arguments["content"].encode("utf-8")
    if context.artifacts is None:
        raise ToolExecutionError("files.write needs object storage, and this runtime has none configured")
    try:
        ref = context.artifacts.ref_for(context.account_id, data, content_type=content_type_for(name))
    except PayloadTooLargeError as error:
        raise ToolArgumentError(f"{name} is too large to store: {error}") from error
    if context.record_object is None:  # a wiring bug, not a bad call: no attempt can fix it
        raise ToolError("files.write needs the runtime graph to record what it stores; none was given")
    try:
        # Recorded (committed) before the put: bytes in the bucket are never unknown to the graph.
        await context.record_object(ref, context.privacy)
    except StoreError as error:
        raise ToolExecutionError(f"could not record {name} before storing it: {error}") from error
    try:
        # The content is the call's arguments: the object carries the call's class (taint), not the tool's own.
        await context.artifacts.put(context.account_id, data, content_type=ref.content_type, privacy=context.privacy)
    except PayloadTooLargeError as error:
        raise ToolArgumentError(f"{name} is too large to store: {error}") from error
    except ArtifactStoreError as error:
        raise ToolExecutionError(f"could not store {name}: {error}") from error
    uri = f"s3://{context.artifacts.bucket}/{ref.key}"
    handle = {"name": name, "bytes": ref.size, "sha256": ref.sha256, "uri": uri}
    return ToolResult(payload=json.dumps(handle, ensure_ascii=False).encode(), content_type=FILE_CONTENT_TYPE,
                      objects=(ref,))


TOOLS: tuple[RegisteredTool, ...] = (
    RegisteredTool(
        spec=ToolSpec(
            name="files.write",
            result_kind="file",
            privacy=PrivacyClass.USER,
            # A handle names content by its hash: it never goes out of date.
            freshness=FreshnessClass.PERMANENT,
            key_args=("name",),
        ),
        description=(
            "Save a text file the user asked for (a Markdown report, a CSV export) and return its handle: "
            "name, size, sha256 and storage URI."
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Plain file name, e.g. 'q3-revenue-by-region.md'.",
                         "minLength": 1, "maxLength": 127},
                "content": {"type": "string", "description": "The full text of the file.",
                            "maxLength": MAX_CONTENT_CHARS},
            },
            "required": ["name", "content"],
            "additionalProperties": False,
        },
        run=write_file,
        timeout_seconds=60.0,
    ),
)
"""The file tools, for the registry."""


__all__ = ["MAX_CONTENT_CHARS", "TOOLS", "check_file_name", "content_type_for", "write_file"]
