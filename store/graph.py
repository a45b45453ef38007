"""The runtime graph API in one namespace: ``from store import graph``.

Every function takes the caller's ``AsyncSession`` first and an
``account_id`` second, and runs inside the caller's transaction; none
commits. The functions live in small modules by entity; this module only
gathers them.
"""

from store.assemblies import (
    assembly_as_previous,
    find_previous_assembly,
    get_context_assembly,
    list_context_assemblies,
    previous_assembly,
    save_context_assembly,
)
from store.bulk import GraphBatch
from store.branches import fork_branch, get_branch, list_branches, load_lineage, reparent_branch
from store.candidates import DEFAULT_LIMITS, CandidateLimits, load_candidates
from store.conversations import (
    add_participant,
    create_account,
    create_conversation,
    get_account,
    get_conversation,
    get_participant,
    list_conversations,
    list_participants,
    next_seq,
)
from store.checkpoints import get_checkpoint, put_checkpoint
from store.skills import get_skill_state, put_skill_state
from store.tool_memories import (
    add_conflict,
    get_tool_memory,
    insert_tool_memory,
    mark_memory_resolution,
    related_memories,
    set_superseded,
)
from store.user_memories import list_user_memories, put_user_memory
from store.messages import (
    append_message,
    finish_model_run,
    get_message,
    get_model_run,
    list_model_runs,
    start_model_run,
)
from store.payloads import capture_artifact, read_artifact_payload
from store.tools import (
    INLINE_PAYLOAD_MAX,
    ArtifactCapture,
    get_artifact,
    get_artifact_arguments,
    get_artifact_for_tool_call,
    get_inline_payload,
    get_tool_call,
    get_tool_call_by_call_id,
    get_tool_call_history,
    insert_artifact,
    record_tool_call,
    update_tool_call,
)
from store.writes import NewMessage, NewToolCall

__all__ = [
    "DEFAULT_LIMITS",
    "INLINE_PAYLOAD_MAX",
    "ArtifactCapture",
    "CandidateLimits",
    "GraphBatch",
    "NewMessage",
    "NewToolCall",
    "add_conflict",
    "add_participant",
    "append_message",
    "capture_artifact",
    "create_account",
    "create_conversation",
    "finish_model_run",
    "fork_branch",
    "get_account",
    "get_artifact",
    "get_artifact_arguments",
    "get_artifact_for_tool_call",
    "get_branch",
    "get_checkpoint",
    "get_context_assembly",
    "get_conversation",
    "get_inline_payload",
    "get_message",
    "get_model_run",
    "get_participant",
    "get_skill_state",
    "get_tool_call",
    "get_tool_call_by_call_id",
    "get_tool_call_history",
    "get_tool_memory",
    "insert_artifact",
    "insert_tool_memory",
    "list_branches",
    "list_context_assemblies",
    "list_conversations",
    "list_model_runs",
    "list_participants",
    "list_user_memories",
    "load_candidates",
    "load_lineage",
    "mark_memory_resolution",
    "next_seq",
    "put_checkpoint",
    "put_skill_state",
    "previous_assembly",
    "find_previous_assembly",
    "assembly_as_previous",
    "put_user_memory",
    "read_artifact_payload",
    "record_tool_call",
    "related_memories",
    "reparent_branch",
    "save_context_assembly",
    "set_superseded",
    "start_model_run",
    "update_tool_call",
]
