"""The weekly series as a PNG for Discord's dark theme (matplotlib, Agg backend: no display needed).

matplotlib is imported when the first chart is drawn, not with this module: it takes ~30 MiB, and a bot whose
members never ask for a chart need not hold it."""

from __future__ import annotations

import io
from collections.abc import Sequence

from bot.momentum import WeekCount

BACKGROUND = "#2b2d31"  # Discord's dark embed background
TEXT = "#dbdee1"
GRID = "#3f4147"
BAR = "#5865f2"  # Discord blurple
PARTIAL = "#949cf7"
SIZE_PX = (1000, 450)
DPI = 100


def weekly_chart(series: Sequence[WeekCount], title: str, subtitle: str = "") -> bytes:
    """A bar per week; the current, partial week lighter and hatched. Returns PNG bytes of SIZE_PX."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(SIZE_PX[0] / DPI, SIZE_PX[1] / DPI), dpi=DPI, facecolor=BACKGROUND)
    ax = fig.add_subplot()
    ax.set_facecolor(BACKGROUND)
    positions = range(len(series))
    counts = [w.count for w in series]
    bars = ax.bar(
        positions, counts, color=[PARTIAL if w.partial else BAR for w in series], width=0.72, zorder=2
    )
    for bar, week in zip(bars, series, strict=True):
        if week.partial:
            bar.set_hatch("///")
            bar.set_edgecolor(BACKGROUND)
        if week.count:
            ax.annotate(
                f"{week.count:,}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                color=TEXT,
                fontsize=9,
            )
    ax.set_xticks(
        list(positions), [w.label.removeprefix("Week of ") for w in series], rotation=0, fontsize=8.5
    )
    ax.tick_params(colors=TEXT, length=0)
    ax.grid(axis="y", color=GRID, linewidth=0.8, zorder=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.spines["bottom"].set_color(GRID)
    ax.set_ylim(0, max([*counts, 1]) * 1.18)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # paper counts are whole numbers
    ax.set_xlabel("Week of (Monday, UTC), by first submission date", color=TEXT, fontsize=9)
    # parse_math=False: a topic name with "$" is text, not TeX for matplotlib to render (or choke on).
    fig.suptitle(title, color="#ffffff", fontsize=14, fontweight="bold", x=0.06, ha="left", parse_math=False)
    if subtitle:
        ax.set_title(subtitle, color=TEXT, fontsize=10, loc="left", pad=10, parse_math=False)
    if any(w.partial for w in series):
        ax.legend(
            handles=[
                Patch(facecolor=BAR, label="papers"),
                Patch(facecolor=PARTIAL, hatch="///", label="this week so far"),
            ],
            loc="upper left",
            frameon=False,
            labelcolor=TEXT,
            fontsize=9,
        )
    fig.subplots_adjust(left=0.06, right=0.98, top=0.82, bottom=0.16)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", facecolor=BACKGROUND)
    return buffer.getvalue()
