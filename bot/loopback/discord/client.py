"""Pointing the real discord.py client at the loopback Discord, and running it there."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import yarl

from bot.loopback.discord.server import LoopbackDiscord

if TYPE_CHECKING:
    import discord

# ----------------------------------------------------------------------------------------------------------
# Pointing discord.py at the fake


@contextlib.contextmanager
def pointing_discord_at(fake: LoopbackDiscord) -> Iterator[None]:
    """Set discord.py's two process-global endpoints (REST base, gateway) to the fake; restore after."""
    from discord.gateway import DiscordWebSocket
    from discord.http import Route

    old_base, old_gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = fake.api_base
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)
    try:
        yield
    finally:
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = old_base, old_gateway


@contextlib.asynccontextmanager
async def running_client(
    fake: LoopbackDiscord, client: discord.Client, *, token: str | None = None
) -> AsyncIterator[discord.Client]:
    """Start `client` against the fake, yield once it is ready, and always close it (no leaked tasks)."""
    with pointing_discord_at(fake):
        runner = asyncio.create_task(client.start(token or fake.token), name="discord-client")
        ready = asyncio.create_task(client.wait_until_ready(), name="discord-client-ready")
        try:
            done, _ = await asyncio.wait(
                {runner, ready}, timeout=fake.timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if runner in done:
                runner.result()  # login failures surface here
                raise RuntimeError("the client stopped before it was ready")
            if ready not in done:
                raise TimeoutError(f"client not ready within {fake.timeout}s; violations={fake.violations}")
            yield client
        finally:
            ready.cancel()
            await client.close()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(runner, ready, return_exceptions=True)
