"""Commands that read the stored history: stats, momentum, topics and match. Each refuses to create an empty
database where the user's one is not."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path

from bot.cli.common import catalog_topic, print_momentum, require_database, write_chart
from bot.cli.parser import program_name
from bot.clock import Clock
from bot.config import Settings
from bot.context import open_context
from bot.momentum import week_start
from bot.services.topics import check_query


async def cmd_stats(settings: Settings, weeks: int, clock: Clock | None) -> int:
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        rows = await ctx.services.status.weekly_category_counts(weeks)
        total = await ctx.services.status.papers_stored()
    categories = sorted({c for _, c, _ in rows})
    week_list = sorted({w for w, _, _ in rows})
    counts = {(w, c): n for w, c, n in rows}
    print(
        f"{total} papers stored in {settings.database_shown}; per week of v1 submission (weeks start Monday, UTC)"
    )
    if not rows:
        prog = program_name()
        print(f"No papers in that range yet: run `{prog} backfill` or `{prog} poll --once`.")
        return 0
    width = max(8, *(len(c) for c in categories))
    print("week".ljust(12) + "".join(c.rjust(width + 2) for c in categories))
    for week in week_list:
        print(week.ljust(12) + "".join(str(counts.get((week, c), 0)).rjust(width + 2) for c in categories))
    return 0


async def cmd_momentum(
    settings: Settings, name: str, weeks: int, png: Path | None, clock: Clock | None
) -> int:
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        topic = await catalog_topic(ctx.services, name)
        result = await ctx.services.momentum.topic(topic, weeks)
    print_momentum(topic.name, result)
    if png is not None:
        await write_chart(png, topic.name, result)
    print(f"Database: {settings.database_shown}")
    return 0


async def cmd_topics(settings: Settings, clock: Clock | None) -> int:
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        tree = await ctx.services.topics.tree(0)
        rows = [row for _, row in tree.rows]
        print(
            f"{len(rows)} catalog topics, each under the topic it belongs to (papers submitted in the last four "
            "weeks; a topic counts the papers of the topics below it)"
        )
        results = await ctx.services.momentum.topics(rows)
        for (depth, row), result in zip(tree.rows, results, strict=True):
            print(f"{result.current:>6}  {result.sparkline()}  {'  ' * depth}{row.name}  [{row.slug}]")
    print(f"Database: {settings.database_shown}")
    return 0


async def cmd_match(
    settings: Settings, text: str, since: datetime | None, limit: int, clock: Clock | None
) -> int:
    query = check_query(text)
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        found = await ctx.services.history.matches(query, since=since)
    weeks = Counter(week_start(p.published).date() for p in found)
    scope = f" since {since:%Y-%m-%d}" if since else ""
    verb = "paper matches" if len(found) == 1 else "papers match"
    print(f"{len(found)} stored {verb} {query.text!r}{scope}")
    for week, count in sorted(weeks.items())[-12:]:
        print(f"  Week of {week:%b} {week.day:<8}{count:>6}")
    for paper in found[:limit]:
        print(f"{paper.published:%Y-%m-%d}  {paper.arxiv_id:<12} {paper.title[:100]}")
    print(f"Database: {settings.database_shown}")
    return 0
