"""A lock between the processes of one machine, on a file beside the SQLite database (flock): the kernel frees it
when its holder dies, whatever the cause, as PostgreSQL frees an advisory lock with its session."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


class FileLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    async def try_acquire(self) -> bool:
        if self._fd is not None:
            return True  # a file lock is never lost while its holder lives
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    async def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
