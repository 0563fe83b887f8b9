"""Exceptions raised by streamdp. Each names the input and what was wrong with it."""

from __future__ import annotations


class StreamdpError(Exception):
    """Base class of every error streamdp raises on purpose."""


class InputError(StreamdpError, ValueError):
    """Input data (a file, a batch, a message) is malformed or out of range.

    The message names the input (file, field, row or byte offset) and the problem.
    """


class TimestampOrderError(InputError):
    """Timestamps went backwards; the offending batch was rejected as a whole."""


class BudgetExhausted(StreamdpError):
    """The privacy budget of a session is spent: nothing more may be released."""
