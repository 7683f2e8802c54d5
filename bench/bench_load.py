"""Load run: 500 posts across 50 channels through the real discord.py client, against the loopback Discord
enforcing 5 messages per 5 s per channel and 50 requests per second overall.

    python bench/bench_load.py [--channels 50] [--papers 10]

Checks that every post arrives exactly once, and reports the total time against the least those limits allow.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.clock import FakeClock
from tests.e2e.helpers import follow
from tests.factories import make_paper
from tests.fakes.arxiv_server import FakeArxiv
from tests.fakes.discord_server import FakeDiscord
from tests.harness import running_paperbot

PER_CHANNEL = (5, 5.0)
GLOBAL_PER_SECOND = 50


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--papers", type=int, default=10, help="matching papers (posts per channel)")
    args = parser.parse_args()
    clock = FakeClock()
    titles = [f"GRPO post-training of language models for reasoning, study {i}" for i in range(args.papers)]
    papers = [
        make_paper(i, title=t, published=clock.now() - timedelta(minutes=i + 1)) for i, t in enumerate(titles)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeDiscord(timeout=600) as discord, FakeArxiv(papers) as arxiv:
            guild = discord.add_guild("Load")
            channels = [discord.add_text_channel(guild, f"papers-{i}") for i in range(args.channels)]
            async with running_paperbot(
                Path(tmp), discord, arxiv, clock=clock, posts_per_channel_per_cycle=max(10, args.papers)
            ) as bot:
                for channel in channels:
                    await follow(bot, guild.id, channel.id, "RL Post-Training")
                await bot.ctx.ingestor().poll_once()
                discord.set_rate_limit(per_channel=PER_CHANNEL, global_per_second=GLOBAL_PER_SECOND)
                began = time.perf_counter()
                report = await bot.worker.deliver_once()
                elapsed = time.perf_counter() - began
            total = args.channels * args.papers
            urls = {c.id: [e["url"] for m in discord.messages(c.id) for e in m["embeds"]] for c in channels}
            exactly_once = all(sorted(u) == sorted(p.abs_url for p in papers) for u in urls.values())
            rejected = sum(1 for r in discord.requests if r.status == 429)
            violations = len(discord.violations)
    limit, window = PER_CHANNEL
    floor_channel = (math.ceil(args.papers / limit) - 1) * window
    floor_global = (math.ceil(total / GLOBAL_PER_SECOND) - 1) * 1.0
    floor = max(floor_channel, floor_global)
    print(
        "| posts | channels | delivered exactly once | 429s met | total (s) | least the limits allow (s) | ratio |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|")
    print(
        f"| {total} | {args.channels} | {'yes' if exactly_once and report.sent == total else 'NO'} | {rejected} | "
        f"{elapsed:.1f} | {floor:.0f} | {elapsed / floor:.2f}x |"
    )
    if violations:
        print(f"{violations} requests broke Discord's rules")


if __name__ == "__main__":
    asyncio.run(main())
