"""Rewinding a session together with the checkpoints of the runs it undoes.

A session knows nothing of checkpoints, yet the spec's rule for ``rewind`` spans both: if
a rewound run has a live checkpoint, delete it too, or a later resume or replay brings the
undone tail back (a replay re-appends the run's stored entries, and returns its answer).
:func:`rewind_with_checkpoints` is that rule in one place, for library code and the
terminal UI alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from lovia.checkpoint import Checkpointer
from lovia.errors import UserError
from lovia.session import RewindableSession, Segment, UndoableRewindSession
from lovia.stores._common import rewind_cut

__all__ = ["rewind_with_checkpoints"]


async def rewind_with_checkpoints(
    session: RewindableSession, checkpointer: Checkpointer | None, session_id: str, *, keep_entries: int,
    undoable: bool = False,
) -> int:
    """Keep the first ``keep_entries`` entries of ``session_id``, forget the checkpoints of the
    runs that undoes, and return how many entries went (what ``session.rewind`` returns).

    Whole later runs are deleted and a run the cut lands inside is truncated, as
    ``session.rewind`` promises. Every run the rewind truncates or deletes loses its
    checkpoint in ``checkpointer`` (``None``: there are none to forget):

    * the runs the cut touches in the segments read just before, as the bundled stores cut,
      go *before* the rewind. A crash in between leaves those runs in the session without
      a replay cache, which loses nothing stored, rather than a replayable undone tail;
    * after the rewind the segments are read again: a run that was there before and is now
      gone or shorter was undone too (another writer rewound meanwhile, or a custom store
      cut elsewhere), and its checkpoint goes then.

    Checkpoints of runs that were not in the session when it was read are never touched:
    runs in flight, and completed runs whose session append has not happened or failed,
    which their next replay heals. A run that another writer appended between that read
    and the rewind, and that the rewind swept away, keeps its checkpoint for the same
    reason: nothing tells it from a run awaiting its heal, so re-issuing its run id puts
    it back at the end of the session rather than losing it.

    With ``undoable`` and a session that can (:class:`~lovia.session.UndoableRewindSession`), the
    rewind is ``rewind_undoably``: what it drops is kept until the next message. The checkpoints
    go all the same: an undo puts the runs back in the session, whose segments hold them whole.

    Raises :class:`~lovia.errors.UserError` for a session without ``rewind`` or a negative
    ``keep_entries``, before anything changes.
    """
    if not isinstance(session, RewindableSession):
        raise UserError(f"{type(session).__name__} cannot rewind: it has no rewind(session_id, *, keep_entries) "
                        "method (see lovia.RewindableSession)")
    before = await session.segments(session_id)
    whole, _ = rewind_cut([len(segment.entries) for segment in before], keep_entries)
    planned = [segment.run_id for segment in before[whole:]]
    if checkpointer is not None:
        for run_id in planned:
            await checkpointer.delete(run_id)
    if undoable and isinstance(session, UndoableRewindSession):
        removed = await session.rewind_undoably(session_id, keep_entries=keep_entries)
    else:
        removed = await session.rewind(session_id, keep_entries=keep_entries)
    if checkpointer is not None:
        for run_id in _undone(before, await session.segments(session_id)):
            if run_id not in planned:
                await checkpointer.delete(run_id)
    return removed


def _undone(before: Sequence[Segment], after: Sequence[Segment]) -> list[str]:
    """Runs of ``before`` that ``after`` lacks or holds fewer entries of, in session order."""
    kept = {segment.run_id: len(segment.entries) for segment in after}
    return [s.run_id for s in before if s.run_id not in kept or kept[s.run_id] < len(s.entries)]
