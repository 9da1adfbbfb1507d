"""One daemon per home: an exclusive lock on `<home>/memory/daemon.lock`.

Two daemons on one database would each keep their own in-memory indexes and workers and drift
apart. The lock is an `fcntl.flock` held for the daemon's lifetime (the kernel drops it when the
process dies, so a crash leaves nothing stale to clean up); the file says who holds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import IO, Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, as before
    fcntl = None  # type: ignore[assignment]


class AlreadyRunning(RuntimeError):
    """Another daemon holds the home's lock."""

    def __init__(self, path: Path, holder: dict[str, Any]) -> None:
        pid = holder.get("pid", "?")
        where = f", port {holder['port']}" if holder.get("port") else ""
        super().__init__(
            f"another mnemonist daemon (pid {pid}{where}) is already using {path.parent}:"
            " stop it first, or point this one at another home (MNEMONIST_HOME)"
        )
        self.holder = holder


class HomeLock:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None
        self._info: dict[str, Any] = {}

    def acquire(self) -> HomeLock:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # 0600 like everything in the memory folder; held until release
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        with contextlib.suppress(OSError):  # an older one made under the umask
            os.fchmod(fd, 0o600)
        handle = os.fdopen(fd, "a+", encoding="utf-8")
        if fcntl is not None:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.seek(0)
                holder = _parse(handle.read())
                handle.close()
                raise AlreadyRunning(self.path, holder) from None
        self._file = handle
        self.describe(pid=os.getpid(), port=None,
                      started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        return self

    def describe(self, **info: Any) -> None:
        """Record who holds the lock (pid, host, port) for the next daemon's message."""
        if self._file is None:
            return
        self._info.update(info)
        self._file.seek(0)
        self._file.truncate()
        self._file.write(json.dumps(self._info))
        self._file.flush()

    def release(self) -> None:
        handle, self._file = self._file, None
        if handle is None:
            return
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()

    @property
    def held(self) -> bool:
        return self._file is not None


def _parse(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
