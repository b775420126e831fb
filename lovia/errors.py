"""Exception types raised by lovia.

Every error lovia raises on purpose derives from :class:`LoviaError`, and its message says
what was wrong and what to do about it.
"""

from __future__ import annotations


class LoviaError(Exception):
    """Base class of every error lovia raises on purpose."""


class UserError(LoviaError):
    """The caller asked for something that cannot be done as asked.

    Examples: a run id in the wrong state for the chosen ``if_run_exists`` policy, a
    checkpoint snapshot that would drop entries already stored.
    """


class RunClaimedError(UserError):
    """A run is held by another execution, so this one may not execute or save it.

    Raised when a run id is issued while another process (or task) executes it, and when an
    execution whose lease lapsed and was taken over tries to save. The message names the
    owner; the stored run is left as it was.
    """


class EntryDecodeError(LoviaError):
    """A stored transcript entry could not be read.

    Raised for an unknown entry ``type`` (written by a newer lovia or by something else) or
    an entry missing a required field. The message names the type and where it was found;
    nothing stored is modified.
    """


class UnknownEntryTypeError(EntryDecodeError):
    """A stored transcript entry has a ``type`` this lovia does not know: most likely a newer lovia wrote it.

    Nothing stored is modified; upgrade lovia to read it.
    """


class StoreError(LoviaError):
    """A session or checkpoint store could not complete an operation.

    The operation had no effect: what was stored before it is intact.
    """


class DatabaseFileError(StoreError):
    """The database file is not a lovia database, is corrupt, or cannot be opened.

    The file is left exactly as it was found.
    """


class SchemaError(DatabaseFileError):
    """The database was written by a newer lovia whose schema this version does not know.

    The file is left untouched; upgrade lovia to open it.
    """


class DamagedEntryError(EntryDecodeError, StoreError):
    """A stored transcript entry is damaged: it is not JSON, or not an entry object.

    A store could not complete the read and changed nothing. The message says where the
    entry is but never quotes it: damaged text may hold any part of a conversation.
    """


class ModelError(LoviaError):
    """The model endpoint refused a request, failed, or died mid-stream."""


class AgentResolutionError(LoviaError):
    """An agent named by a checkpoint cannot be found, or two agents share a name."""


class MaxTurnsExceeded(LoviaError):
    """A run used more model turns than its ``max_turns`` allows."""


class GuardrailTripped(LoviaError):
    """An input or output guardrail rejected the run."""
