"""Real `python -m bot` processes with ROLES, on one database, against the loopback Discord and arXiv; waits on
what they log and store, with generous bounds."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.cli.process import clean_env


class BotProcess:
    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log = log

    @classmethod
    async def start(cls, env: dict[str, str], log: Path) -> BotProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            env=clean_env(env, log.parent),
            cwd=log.parent,
            stdout=log.open("ab"),
            stderr=asyncio.subprocess.STDOUT,
        )
        return cls(proc, log)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    async def wait_for_line(self, pattern: str, timeout: float = 60) -> None:  # noqa: ASYNC109
        regex = re.compile(pattern)
        await eventually(lambda: _true(bool(regex.search(self.text()))), timeout, lambda: self.text()[-3000:])

    async def kill(self) -> None:
        """SIGKILL: nothing of the process runs after it (no cleanup, no lease released)."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), timeout=60)


async def _true(value: bool) -> bool:
    return value


async def eventually(
    check: Callable[[], Awaitable[bool]],
    timeout: float = 60,  # noqa: ASYNC109
    explain: Callable[[], str] = lambda: "",
) -> None:
    """Wait until `check()` holds: for what other processes do, which sends this process no event."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {explain()}")
        await asyncio.sleep(0.1)
