"""A release whose catalog cannot form a tree stops the bot at start (`python -m bot`, a real process against the
loopback Discord) with one line naming the topic, like every other configuration error."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.fakes.checked_discord import FakeDiscord

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.sqlite_only  # the bot as a process, on its own settings and SQLite file


def release_with(tmp_path: Path, slug: str, parent: str) -> Path:
    """A copy of this checkout's code whose packaged catalog gives topic `slug` the parent `parent`."""
    root = tmp_path / "release"
    for package in ("bot", "cogs"):
        shutil.copytree(REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    catalog = root / "bot" / "topics" / "catalog.toml"
    text = catalog.read_text(encoding="utf-8")
    table = re.compile(rf'(\[\[topic\]\]\nslug = "{re.escape(slug)}"\nname = "[^"]*"\n)(parent = "[^"]*"\n)?')
    changed, count = table.subn(lambda m: f'{m.group(1)}parent = "{parent}"\n', text)
    assert count == 1, f"no topic {slug!r} in the catalog"
    catalog.write_text(changed, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("slug", "parent", "problem"),
    [
        (
            "rl-post-training",
            "grpo",
            "topic 'RL Post-Training' (slug 'rl-post-training') is its own ancestor: "
            "'rl-post-training' -> 'grpo' -> 'rl-post-training'",
        ),
        ("grpo", "rl-post-trainin", "names an unknown parent 'rl-post-trainin'"),
        (
            "grpo",
            "grpo",
            "topic 'Group Relative Policy Optimization' (slug 'grpo') names itself as its parent",
        ),
    ],
)
async def test_a_catalog_that_is_no_tree_stops_the_start_with_one_line_naming_the_topic(
    tmp_path: Path, discord: FakeDiscord, slug: str, parent: str, problem: str
) -> None:
    release = release_with(tmp_path, slug, parent)
    settings = ("DISCORD_", "ARXIV_", "DATABASE_", "PAPERWATCH_", "LOG_LEVEL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(settings)}
    env.update(
        PYTHONPATH=str(release),
        XDG_DATA_HOME=str(tmp_path / "xdg-data"),
        DISCORD_TOKEN=discord.token,
        DISCORD_API_BASE=discord.api_base,
        DISCORD_GATEWAY_URL=discord.gateway_url,
        DATABASE_PATH=str(tmp_path / "db.sqlite3"),
        LOG_LEVEL="ERROR",  # discord.py warns at start that voice is not installed
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        env=env,
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 2, err.decode()
    assert out == b"" and len(lines) == 1, err.decode()
    assert lines[0].startswith("paperwatch: packaged catalog.toml: topic ") and problem in lines[0]
    assert "a parent is another catalog topic's slug" in lines[0]
