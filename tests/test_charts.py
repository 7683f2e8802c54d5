"""bot.charts: the weekly chart is a PNG of the promised size, whatever the names look like."""

from __future__ import annotations

import io
import struct
from datetime import date, timedelta

from bot.charts import SIZE_PX, weekly_chart
from bot.momentum import WeekCount


def test_chart_is_a_png_of_the_expected_size() -> None:
    series = [WeekCount(date(2026, 9, 7) + timedelta(weeks=i), i * 3, partial=i == 11) for i in range(12)]
    data = weekly_chart(series, "RL Post-Training", "49 papers in the last four weeks")
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", io.BytesIO(data[16:24]).read())
    assert (width, height) == SIZE_PX


def test_chart_draws_names_that_look_like_tex() -> None:
    series = [WeekCount(date(2026, 9, 7), 2, partial=True)]
    assert weekly_chart(series, r"x $\undefinedcmd$ y", "costs $5 and $6")[:4] == b"\x89PNG"
