"""Temporal workflows: orchestration only, deterministic, ids in and ids out.

``ALL_WORKFLOWS`` is what the worker registers.
"""

from workflows.modes import (
    DiscussionWorkflow,
    MultiModelTurnWorkflow,
    ParentResumeWorkflow,
    ScheduledJobWorkflow,
    SubagentBatchWorkflow,
)
from workflows.turn import AgentTurnWorkflow

ALL_WORKFLOWS = [
    AgentTurnWorkflow,
    MultiModelTurnWorkflow,
    SubagentBatchWorkflow,
    ParentResumeWorkflow,
    DiscussionWorkflow,
    ScheduledJobWorkflow,
]

__all__ = [
    "ALL_WORKFLOWS",
    "AgentTurnWorkflow",
    "DiscussionWorkflow",
    "MultiModelTurnWorkflow",
    "ParentResumeWorkflow",
    "ScheduledJobWorkflow",
    "SubagentBatchWorkflow",
]
