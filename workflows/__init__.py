"""Temporal workflows: orchestration only, deterministic, ids in and ids out.

One workflow per module: ``turn`` (the agent turn every mode is built from),
``multi_model``, ``subagents``, ``parent_resume``, ``discussion`` and
``scheduled_job``; ``options`` holds the timeouts and retry policies they
share, ``visibility`` the search attributes and summaries the Temporal UI
shows for them. They import :mod:`contracts` and nothing else of the project: activity
names come from :class:`contracts.ActivityName`, never from the activities.

``ALL_WORKFLOWS`` is what the worker registers.
"""

from workflows.discussion import DiscussionWorkflow
from workflows.multi_model import MultiModelTurnWorkflow
from workflows.parent_resume import ParentResumeWorkflow
from workflows.scheduled_job import ScheduledJobWorkflow
from workflows.subagents import SubagentBatchWorkflow
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
