"""A gateway process with SHARD_COUNT and SHARD_IDS (`python -m bot`, ROLES=gateway) identifies as its shard,
holds the servers of that shard only, and answers their commands; two such processes share a bot's servers, each
answering its own; one process may run several shards; bad shard settings stop it in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import load_settings
from bot.errors import ConfigError
from bot.loopback.discord import ALL_PERMISSIONS, Guild
from tests.cli.process import run_cli
from tests.e2e.bot_processes import BotProcess
from tests.fakes.checked_discord import FakeDiscord

# These start the bot as processes with their own settings (DATABASE_URL included): one run, not one per back end.
pytestmark = pytest.mark.sqlite_only


def shard_of(guild: Guild, count: int) -> int:
    return (guild.id >> 22) % count  # Discord's rule


def one_guild_per_shard(discord: FakeDiscord) -> tuple[Guild, Guild]:
    """Two servers, one in each of two shards (ids carry the time: new ones until the shard differs)."""
    first = discord.add_guild("Lab 0")
    second = discord.add_guild("Lab 1")
    while shard_of(second, 2) == shard_of(first, 2):
        discord.guilds.remove(second)
        second = discord.add_guild("Lab 1")
    return (first, second) if shard_of(first, 2) == 0 else (second, first)


def gateway_env(discord: FakeDiscord, database: Path, shard_ids: str) -> dict[str, str]:
    return {
        "ROLES": "gateway",
        "SHARD_COUNT": "2",
        "SHARD_IDS": shard_ids,
        "DISCORD_TOKEN": discord.token,
        "DISCORD_API_BASE": discord.api_base,
        "DISCORD_GATEWAY_URL": discord.gateway_url,
        "DATABASE_PATH": str(database),
        "LOG_LEVEL": "INFO",
    }


def ready_guilds(discord: FakeDiscord, shard: tuple[int, int]) -> list[str]:
    """The servers the READY of the session identified as `shard` announced."""
    ready = next(e for e in discord.sessions[shard].events if e["t"] == "READY")
    return [g["id"] for g in ready["d"]["guilds"]]


def shards_sent(discord: FakeDiscord, interaction_id: int) -> list[tuple[int, int] | None]:
    return next(e[2] for e in discord.gateway_log if e[0] == "INTERACTION" and e[1] == interaction_id)


async def test_a_gateway_process_runs_its_shard_and_answers_that_shards_servers(
    tmp_path: Path, discord: FakeDiscord
) -> None:
    zero, one = one_guild_per_shard(discord)
    channel = discord.add_text_channel(one, "papers")
    admin = discord.add_member(one, "ada", permissions=ALL_PERMISSIONS)
    env = gateway_env(discord, tmp_path / "paperwatch.sqlite3", "1")
    process = await BotProcess.start(env, tmp_path / "gateway.log")
    try:
        await discord.wait_for(lambda: discord.identify_count >= 1, timeout=60)
        await process.wait_for_line("logged in as")
        identified = [entry for entry in discord.gateway_log if entry[0] == "IDENTIFY"]
        assert [entry[2] for entry in identified] == [[1, 2]]  # shard 1 of 2, and no other
        assert ready_guilds(discord, (1, 2)) == [str(one.id)]  # not the other shard's server
        status = await discord.invoke(one, channel, admin, "status")
        assert (await status.wait_response())["type"] in (4, 5)
    finally:
        assert await process.stop() in (0, -15)
    assert "Traceback" not in process.text()
    assert zero.id != one.id


async def test_two_gateway_processes_each_answer_the_servers_of_their_shard(
    tmp_path: Path, discord: FakeDiscord
) -> None:
    """Shard 0 in one process, shard 1 in another: each identifies its own session, and a command in either
    server reaches the process holding it, and only it (the other process never sees it)."""
    guilds = one_guild_per_shard(discord)
    channels = [discord.add_text_channel(g, "papers") for g in guilds]
    admins = [discord.add_member(g, "ada", permissions=ALL_PERMISSIONS) for g in guilds]
    database = tmp_path / "paperwatch.sqlite3"
    processes = []
    for shard in (0, 1):  # one after the other: the second identifying must not end the first's session
        process = await BotProcess.start(
            gateway_env(discord, database, str(shard)), tmp_path / f"{shard}.log"
        )
        processes.append(process)
        await process.wait_for_line("logged in as")
    try:
        assert sorted(e[2] for e in discord.gateway_log if e[0] == "IDENTIFY") == [[0, 2], [1, 2]]
        assert discord.sessions[(0, 2)].id != discord.sessions[(1, 2)].id
        for shard, guild in enumerate(guilds):
            assert ready_guilds(discord, (shard, 2)) == [str(guild.id)]
        for shard in (1, 0):  # the first process's server last: its session outlived the second IDENTIFY
            status = await discord.invoke(guilds[shard], channels[shard], admins[shard], "status")
            await discord.wait_for(lambda: bool(status.responses), timeout=60)  # noqa: B023
            assert status.responses[0]["type"] in (4, 5)
            assert shards_sent(discord, status.id) == [(shard, 2)]
            assert len(status.responses) == 1  # answered once: no other process got it
    finally:
        codes = [await p.stop() for p in processes]
    assert all(code in (0, -15) for code in codes)
    assert not any("Traceback" in p.text() for p in processes)


async def test_one_process_runs_both_shards_and_holds_both_servers(
    tmp_path: Path, discord: FakeDiscord
) -> None:
    guilds = one_guild_per_shard(discord)
    channels = [discord.add_text_channel(g, "papers") for g in guilds]
    admins = [discord.add_member(g, "ada", permissions=ALL_PERMISSIONS) for g in guilds]
    env = gateway_env(discord, tmp_path / "paperwatch.sqlite3", "0,1")
    process = await BotProcess.start(env, tmp_path / "gateway.log")
    try:
        await process.wait_for_line("logged in as")
        await discord.wait_for(lambda: len(discord.sessions) == 2, timeout=60)
        assert sorted(e[2] for e in discord.gateway_log if e[0] == "IDENTIFY") == [[0, 2], [1, 2]]
        for shard in (0, 1):
            status = await discord.invoke(guilds[shard], channels[shard], admins[shard], "status")
            await discord.wait_for(lambda: bool(status.responses), timeout=60)  # noqa: B023
            assert status.responses[0]["type"] in (4, 5)
            assert shards_sent(discord, status.id) == [(shard, 2)]
    finally:
        assert await process.stop() in (0, -15)
    assert "Traceback" not in process.text()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SHARD_IDS": "0"}, "SHARD_IDS needs SHARD_COUNT"),
        ({"SHARD_COUNT": "2", "SHARD_IDS": "0,2"}, "SHARD_IDS 2 not below SHARD_COUNT=2"),
        ({"SHARD_COUNT": "2", "SHARD_IDS": "one"}, "give shard numbers, comma-separated"),
    ],
)
def test_shard_settings_are_checked_at_start(
    env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        load_settings(_env_file=None)


async def test_bad_shard_settings_stop_the_process_in_one_line(tmp_path: Path) -> None:
    code, _out, err = await run_cli("run", env={"SHARD_COUNT": "2", "SHARD_IDS": "3"}, cwd=tmp_path)
    assert code == 2
    assert err.strip().splitlines() == [
        "paperwatch: invalid settings (see .env.example): settings: SHARD_IDS 3 not below SHARD_COUNT=2 "
        "(shards are numbered from 0)"
    ]
