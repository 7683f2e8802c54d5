"""How a topic is moving: papers in a window against the window before, its share of all new papers, and a
weekly series. Counted by v1 submission date in UTC; windows end at the last complete day. Pure values and
rules: bot/services/momentum.py reads the counts from the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from bot.errors import PaperwatchError

_NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
SERIES_WEEKS = 12
MAX_WEEKS = 52  # a window of a year, against the year before: the stored history rarely goes further
TREND_MIN_COUNT = 10  # below this in both windows, a percentage says more about noise than about the field
SAME_WITHIN_PCT = 5


class InvalidWeeks(PaperwatchError, ValueError):
    """A window length outside 1..MAX_WEEKS; the message says what is allowed."""


def check_weeks(weeks: int) -> None:
    if isinstance(weeks, bool) or not isinstance(weeks, int) or not 1 <= weeks <= MAX_WEEKS:
        raise InvalidWeeks(
            f"weeks is the length of the window compared with the one before it: a whole number of weeks "
            f"from 1 to {MAX_WEEKS} (got {weeks})."
        )


@dataclass(frozen=True, slots=True)
class WeekCount:
    start: date  # a Monday
    count: int
    partial: bool  # the current week, still filling

    @property
    def label(self) -> str:
        return f"Week of {self.start.strftime('%b')} {self.start.day}"


@dataclass(frozen=True, slots=True)
class Momentum:
    topic: str
    weeks: int
    window_start: datetime
    window_end: datetime  # exclusive: midnight UTC that ended the last complete day
    current: int
    previous: int
    all_new: int  # papers of the denominator categories submitted in the window
    categories: tuple[str, ...]  # the denominator's categories
    name_categories: bool  # say which categories the share is of (when the topic narrows them)
    series: tuple[WeekCount, ...]
    suggested: int = 0  # the learned scorer's suggestions in the window: shown beside, never counted

    @property
    def change_pct(self) -> float | None:
        if self.previous == 0:
            return None
        return (self.current - self.previous) / self.previous * 100

    @property
    def too_small(self) -> bool:
        return max(self.current, self.previous) < TREND_MIN_COUNT

    @property
    def share_pct(self) -> float | None:
        return self.current / self.all_new * 100 if self.all_new else None

    @property
    def growth_score(self) -> float:
        """For ranking: smoothed growth ratio, so 0 -> 3 does not outrank 100 -> 150."""
        return (self.current + 5) / (self.previous + 5)

    def sentence(self) -> str:
        span = _span(self.weeks)
        before = f"the {_span(self.weeks, last=False)} before"
        if self.current == 0 and self.previous == 0:
            return f"No papers in {span}, and none in {before}."
        count = _papers(self.current)
        pct = self.change_pct
        if pct is None:
            text = f"{count} in {span}, new this period."
        elif self.too_small:
            text = f"{count} in {span}, against {self.previous} in {before}: too few to call a trend."
        elif abs(pct) < SAME_WITHIN_PCT:
            text = f"{count} in {span}, about the same as {before}."
        else:
            text = f"{count} in {span}, {'up' if pct > 0 else 'down'} {abs(pct):.0f}% on {before}."
        share = self.share_pct
        if share is not None:
            where = f" in {', '.join(self.categories)}" if self.name_categories else ""
            text += f" {_percent(share)} of all new papers{where}."
        if self.suggested:
            more = "1 more paper" if self.suggested == 1 else f"{self.suggested} more papers"
            text += f" The learned scorer suggests {more}, not counted here."
        return text

    def sparkline(self) -> str:
        return sparkline([w.count for w in self.series])


def _span(weeks: int, *, last: bool = True) -> str:
    word = _NUMBER_WORDS[weeks] if weeks < len(_NUMBER_WORDS) else str(weeks)
    phrase = "week" if weeks == 1 else f"{word} weeks"
    return f"the last {phrase}" if last else phrase


def _papers(n: int) -> str:
    return "1 paper" if n == 1 else f"{n:,} papers"


def _percent(value: float) -> str:
    if value == 0:
        return "0%"
    if value < 0.1:
        return "<0.1%"
    if value < 10:
        return f"{value:.1f}%"
    return f"{value:.0f}%"


def sparkline(values: Sequence[int]) -> str:
    bars = "▁▂▃▄▅▆▇█"
    top = max(values, default=0)
    if top == 0:
        return bars[0] * len(values)
    return "".join(bars[min(len(bars) - 1, round(v / top * (len(bars) - 1)))] for v in values)


def window_bounds(now: datetime, weeks: int) -> tuple[datetime, datetime, datetime]:
    """(previous window start, window start, window end): the window ends at the last midnight UTC."""
    end = now.replace(hour=0, minute=0, second=0, microsecond=0)
    start = end - timedelta(weeks=weeks)
    return start - timedelta(weeks=weeks), start, end


def week_start(moment: datetime) -> datetime:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=day.weekday())


def rank_by_growth(items: Sequence[Momentum]) -> list[Momentum]:
    """Fastest-growing first; topics too small to call a trend after those that are not."""
    return sorted(items, key=lambda m: (m.too_small, -m.growth_score, -m.current, m.topic.lower()))
