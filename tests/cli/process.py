"""The command line as a real process (`python -m bot`): the developer's settings never leak in, and a database
without a .env lands under the test's own folder."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SETTINGS_PREFIXES = (
    "DISCORD_",
    "ARXIV_",
    "DATABASE_",
    "PAPERWATCH_",
    "LOG_LEVEL",
    "ROLES",
    "SHARD_",
    "DELIVERY_",
)


def clean_env(env: dict[str, str], cwd: Path) -> dict[str, str]:
    """This process's environment without any setting of paperwatch's, plus `env`; this checkout's `bot`."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}
    full_env["XDG_DATA_HOME"] = str(cwd / "xdg-data")
    full_env.update(env)
    full_env["PYTHONPATH"] = str(REPO)
    return full_env


async def run_cli(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """Run `python -m bot ARGS` in `cwd` to the end: (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        env=clean_env(env, cwd),
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    return proc.returncode or 0, out.decode(), err.decode()


def settings_free_folder(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make this process look like a fresh folder for `main()`: no .env, none of the developer's settings."""
    for name in list(os.environ):
        if name.startswith(SETTINGS_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(folder / "xdg-data"))
    monkeypatch.chdir(folder)
    return folder
