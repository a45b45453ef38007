"""SQLAlchemy models of the runtime graph. ORM objects never leave ``store/``.

Tables::

    accounts
    conversations ── branches (tree, per conversation)
                 ├── participants
                 ├── messages, model_runs
                 ├── tool_calls ── tool_artifacts
                 │             └── stored_objects (every object a call put in the bucket)
                 ├── tool_memories, skill_states, continuation_checkpoints
                 ├── context_assemblies ── policy_decisions
                 └── evidence_requests (a model's recalls, per tool call)
    user_memories (per account)
    account_deletions (tombstones of deleted accounts: no account_id, no user data)
"""

from store.models.assemblies import ContextAssembly, PolicyDecision
from store.models.base import Base
from store.models.deletions import AccountDeletion
from store.models.evidence import EvidenceRequest
from store.models.objects import ObjectState, StoredObject
from store.models.graph import Account, Branch, Conversation, Message, ModelRun, Participant
from store.models.memory import ContinuationCheckpoint, SkillState, ToolMemory, UserMemory
from store.models.tools import ToolArtifact, ToolCall

metadata = Base.metadata
"""The metadata of every Dossier table (what migrations are compared with)."""

__all__ = [
    "Account",
    "AccountDeletion",
    "Base",
    "Branch",
    "ContextAssembly",
    "ContinuationCheckpoint",
    "Conversation",
    "EvidenceRequest",
    "Message",
    "ModelRun",
    "ObjectState",
    "Participant",
    "PolicyDecision",
    "SkillState",
    "StoredObject",
    "ToolArtifact",
    "ToolCall",
    "ToolMemory",
    "UserMemory",
    "metadata",
]
