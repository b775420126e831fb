"""The files and directories lovia creates hold conversations: readable by their owner only.

Modes are set exactly, whatever the process's umask: a umask of 000 must not make a
transcript world-readable. Directories and files that already exist keep their modes;
they are the user's to choose.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "make_file_private", "make_private_dirs", "replace_file_privately"]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def safe_file_name(text: str) -> str:
    """``text`` as a file name: every character but letters, digits, ``.``, ``_`` and ``-`` made ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def make_private_dirs(directory: str | os.PathLike[str]) -> None:
    """Create ``directory`` and each missing parent, every new one with mode 0700.

    (``Path.mkdir(parents=True)`` would give the parents the umask's default, 0777 under
    umask 000.) A directory another process creates meanwhile is accepted as it is.
    """
    missing: list[Path] = []
    path = Path(directory)
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not path.is_dir():
                raise
            continue
        os.chmod(path, PRIVATE_DIR_MODE)  # mkdir's mode is filtered through the umask


def make_file_private(path: str | os.PathLike[str]) -> None:
    """Set a file just created by code that takes only a path (SQLite) to mode 0600.

    Call it before anything is written to the file. A path with no file behind it (an
    in-memory database) and a file of another user (whose process created it first: its mode
    is theirs to choose) are left as they are.
    """
    with contextlib.suppress(FileNotFoundError, PermissionError):
        os.chmod(path, PRIVATE_FILE_MODE)


def replace_file_privately(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` as a new file with mode 0600 that replaces any old one.

    Atomic: the text goes to a temporary file beside ``path``, is flushed to disk, then
    renamed over ``path``, so a crash leaves the old file or the new one, never a mix, and
    two writers never interleave. The directory must exist (see :func:`make_private_dirs`).
    """
    target = Path(path)
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)  # mkstemp already uses 0600; say so rather than rely on it
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
