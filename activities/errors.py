"""Errors raised by the I/O steps themselves (store and policy errors pass through).

::

    ActivityError
    └── ToolOutcomeError   a tool outcome that cannot be captured as given
"""

from __future__ import annotations


class ActivityError(Exception):
    """Base class of activity-level errors."""


class ToolOutcomeError(ActivityError):
    """A tool outcome is inconsistent (e.g. a success without a result)."""
