"""`ask` and `brief`: /ask's and /brief's answers in the terminal, from the stored history."""

from __future__ import annotations

from bot.cli.common import catalog_topic, require_database
from bot.clock import Clock
from bot.config import Settings
from bot.context import open_context
from bot.render.answer import answer_text, brief_text
from bot.services.ask import check_brief_weeks, check_question


async def cmd_ask(
    settings: Settings, question: str, topic: str | None, since: str | None, clock: Clock | None
) -> int:
    asked = check_question(question)  # before opening anything: a mistake is told at once
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        service = ctx.services.ask
        since_at = service.since(since)
        row = await catalog_topic(ctx.services, topic) if topic is not None else None
        answer = await service.ask(asked, topic=row, since=since_at)
    print(answer_text(answer))
    return 0


async def cmd_brief(settings: Settings, topic: str, weeks: int, clock: Clock | None) -> int:
    check_brief_weeks(weeks)
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        row = await catalog_topic(ctx.services, topic)
        brief = await ctx.services.ask.brief(row, weeks)
    print(brief_text(brief))
    return 0
