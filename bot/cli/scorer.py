"""`scorer train` and `scorer status`: the learned scorer of the stored history, by hand.

The bot trains it in the background; these let an operator train it now and read, per topic, whether it is
scored (with its calibrated threshold's estimated precision and recall) or query-only, and why. The figures on
labelled real papers come from `python bench/scorer_eval.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.cli.common import require_database
from bot.clock import Clock
from bot.config import Settings
from bot.context import open_context
from bot.models import TopicRow
from bot.topics.scorer import TopicScorer
from bot.topics.scorer_training import scorer_folder


async def cmd_scorer(settings: Settings, action: str, clock: Clock | None) -> int:
    require_database(settings)
    async with open_context(settings, clock) as ctx:
        if action == "train":
            await ctx.services.topics.retrain()
        rows = await ctx.services.topics.visible_to(0)
        statuses = [ctx.services.topics.scorer_status(row) for row in rows]
    print(render_statuses(rows, statuses))
    print(f"\nModel: in the database (a copy and the feature rows: {scorer_folder(settings.database_path)})")
    return 0


def render_statuses(rows: Sequence[TopicRow], statuses: Sequence[TopicScorer]) -> str:
    scored = sum(1 for s in statuses if s.scored)
    lines = [f"{scored} of {len(rows)} topics have a learned scorer; the others are query-only."]
    width = max((len(r.name) for r in rows), default=5)
    for row, status in sorted(zip(rows, statuses, strict=True), key=lambda pair: pair[0].name.casefold()):
        if status.scored:
            detail = (
                f"scored       {status.positives:>6} positives; above its threshold, estimated precision "
                f"{_percent(status.estimated_precision)}, recall {_percent(status.estimated_recall)}"
            )
        else:
            detail = f"query-only   {status.why}"
        lines.append(f"  {row.name.ljust(width)}  {detail}")
    return "\n".join(lines)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"
