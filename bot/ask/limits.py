"""Rate limits on asking: so many questions per member and per server in a sliding window, on the injected
clock (an answer reads the index and may call a language model: one member must not hog either)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from bot.clock import Clock
from bot.errors import PaperwatchError


class AskRateLimited(PaperwatchError):
    def __init__(self, who: str, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(f"{who} asked a lot just now: try again in {max(1, round(retry_after))} s.")


@dataclass(frozen=True)
class Rate:
    count: int
    seconds: float


@dataclass
class RateLimiter:
    clock: Clock
    per_member: Rate = Rate(4, 60.0)
    per_server: Rate = Rate(20, 60.0)
    _seen: dict[tuple[str, int], deque[float]] = field(default_factory=dict)

    def admit(self, guild_id: int, member_id: int) -> None:
        """Count one question, or raise AskRateLimited (counting nothing) when either limit is reached."""
        now = self.clock.monotonic()
        checks = [
            (("member", member_id), self.per_member, "You have"),
            (("server", guild_id), self.per_server, "This server has"),
        ]
        for key, rate, who in checks:
            times = self._window(key, rate, now)
            if len(times) >= rate.count:
                raise AskRateLimited(who, times[0] + rate.seconds - now)
        for key, _, _ in checks:
            self._seen.setdefault(key, deque()).append(now)

    def _window(self, key: tuple[str, int], rate: Rate, now: float) -> deque[float]:
        times = self._seen.get(key, deque())
        while times and times[0] <= now - rate.seconds:
            times.popleft()
        if not times:
            self._seen.pop(key, None)  # forget the quiet ones: memory stays bounded by the active askers
        return times
