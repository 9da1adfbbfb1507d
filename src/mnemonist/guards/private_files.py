"""Files only their owner may read: the memory folder, the database and its WAL and shared
memory, exports and logs hold every memory, so they are made 0700 / 0600 whatever the umask.

SQLite gives a database's `-wal`, `-shm` and `-journal` files the permissions of the database
file itself, so creating the database 0600 is enough for the files SQLite makes later; the ones
already there (an older home) are tightened when the daemon starts. A folder or file this user
does not own (a shared setup) is left as it is: tightening is never a reason not to start.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO

FOLDER_MODE = 0o700
FILE_MODE = 0o600
#: what SQLite keeps beside a database file
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def _tighten(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or stat.S_IMODE(st.st_mode) == mode:
            return
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return
        os.chmod(path, mode)


def private_folder(path: Path) -> Path:
    """`path` made (with its parents) and 0700."""
    path = Path(path)
    path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    _tighten(path, FOLDER_MODE)
    return path


def private_file(path: Path) -> Path:
    """`path` created empty if missing, and 0600 either way."""
    path = Path(path)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    _tighten(path, FILE_MODE)
    return path


def private_database(path: Path) -> None:
    """The SQLite file at `path` created 0600 if missing (so that SQLite makes its WAL and
    shared memory 0600 too), and those already there tightened to 0600."""
    path = Path(path)
    with contextlib.suppress(OSError):  # cannot create it: SQLite says why, in its words
        private_file(path)
    for suffix in SQLITE_SUFFIXES[1:]:
        _tighten(path.with_name(path.name + suffix), FILE_MODE)


def open_private(path: Path, mode: str = "w", encoding: str = "utf-8") -> IO[str]:
    """`open(path, mode)` for text ("w" or "a"), the file 0600 whatever the umask, also when
    it existed before."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    try:
        with contextlib.suppress(OSError):
            if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
        return os.fdopen(fd, mode, encoding=encoding)
    except BaseException:
        os.close(fd)
        raise
