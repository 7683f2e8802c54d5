"""Deliver processes (`python -m bot` with ROLES=deliver) sharing one PostgreSQL outbox against the loopback Discord:
each (channel, paper) is posted exactly once, also when the process holding channels is killed with SIGKILL
mid-batch (its leases run out and the others take its channels over, checking what it left 'sending'); none of
them opens the gateway."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from tests.cli.process import run_cli
from tests.e2e.bot_processes import (
    CHANNELS,
    PAPERS,
    BotProcess,
    all_sent,
    assert_each_posted_once,
    deliver_env,
    fill_outbox,
)
from tests.fakes.checked_discord import FakeDiscord

# These start the bot as processes with their own settings (DATABASE_URL included): one run, not one per back end.
pytestmark = pytest.mark.sqlite_only


async def test_deliver_processes_post_each_paper_once_even_when_one_is_killed_holding_channels(
    tmp_path: Path, discord: FakeDiscord, postgres_url: str
) -> None:
    guild = discord.add_guild("Lab")
    channels = [discord.add_text_channel(guild, f"papers-{i}").id for i in range(CHANNELS)]
    papers = await fill_outbox(postgres_url, channels, guild.id)
    discord.set_rate_limit(per_channel=(2, 1.0), global_per_second=None)  # a channel's batch takes seconds
    workers = [
        await BotProcess.start(deliver_env(discord, postgres_url), tmp_path / f"deliver-{i}.log")
        for i in range(3)
    ]
    db = await asyncpg.connect(postgres_url)
    try:
        total = CHANNELS * PAPERS
        posted = lambda: sum(len(discord.messages(c)) for c in channels)  # noqa: E731
        await discord.wait_for(lambda: posted() >= 6, timeout=90)
        holders = {
            int(row[0].split(":")[1])
            for row in await db.fetch("SELECT claimed_by FROM delivery_leases WHERE claimed_by <> ''")
        }
        victim = next(w for w in workers if w.pid in holders)
        await victim.kill()  # mid-batch, holding channels
        assert posted() < total, "the batch finished before the kill"
        await all_sent(db, total, workers)
    finally:
        await db.close()
        for worker in workers:
            await worker.stop()
    assert_each_posted_once(discord, channels, papers)
    assert discord.identify_count == 0  # no deliver process opened the gateway
    # Nor asked for a channel: each one's kind is known from its follow (requests under the global limit).
    assert discord.requests_to("GET", "/channels/{id}") == []
    assert discord.requests_to("PUT", "/applications/{id}/commands") == []  # nor synced commands
    for worker in workers:
        assert discord.token not in worker.text()
        assert "Traceback" not in worker.text(), worker.text()[-3000:]
    survivors = [w for w in workers if w is not victim]
    assert all(w.proc.returncode in (0, -15) for w in survivors)


async def test_an_unknown_role_stops_the_process_in_one_line(tmp_path: Path) -> None:
    code, _out, err = await run_cli("run", env={"ROLES": "gateway,pol"}, cwd=tmp_path)
    assert code == 2
    assert err.strip().splitlines() == [
        "paperwatch: invalid settings (see .env.example): ROLES: unknown role 'pol': name one or more of "
        "gateway, poll, deliver, comma-separated"
    ]


async def test_a_wrong_database_url_stops_each_role_with_one_line_naming_host_and_database(
    tmp_path: Path, discord: FakeDiscord, postgres_url: str
) -> None:
    # The cluster's port, a database that does not exist, a password that must never be shown.
    wrong = postgres_url.replace("postgres@", "postgres:s3cret-Pa55@").rsplit("/", 1)[0] + "/nowhere"
    port = wrong.rsplit(":", 1)[1].split("/")[0]
    for roles in ("poll", "deliver", "gateway,poll,deliver"):
        env = {**deliver_env(discord, wrong), "ROLES": roles, "LOG_LEVEL": "WARNING"}
        code, out, err = await run_cli("run", env=env, cwd=tmp_path)
        assert code == 3, (roles, err)
        assert len(err.strip().splitlines()) == 1, (roles, err)
        assert err.startswith(
            f"paperwatch: could not open the PostgreSQL database 'nowhere' on 127.0.0.1:{port}"
        )
        assert "s3cret-Pa55" not in out + err and "Traceback" not in err
