"""The client's errors: one tree, so a caller can catch what the client refuses in one place.

::

    ClientError
     +-- InvalidInputError     bad input, refused before anything is written
     +-- UnknownIdError        not a record of this account (another account's reads the same way)
     +-- AnswerRefusedError    an answer to a deferred call that could not be captured
"""

from __future__ import annotations


class ClientError(Exception):
    """A request the client cannot carry out (unknown conversation, bad model spec...)."""


class InvalidInputError(ClientError):
    """Input refused before anything was written.

    Blank or malformed text, a malformed id, a fork point off the branch's
    lineage, a deferred answer of the wrong kind, a count out of range.
    """


class UnknownIdError(ClientError):
    """An id this account has no record of: unknown, or another account's (the two read the same)."""


class AnswerRefusedError(ClientError):
    """A deferred call's turn could not take its answer (the workflow has ended).

    Nothing was captured: the call is still deferred, as it was.
    """


__all__ = ["AnswerRefusedError", "ClientError", "InvalidInputError", "UnknownIdError"]
