"""Settings from the environment and `.env`, validated once at start. `.env.example` documents each one."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.errors import ConfigError

DEFAULT_CATEGORIES = ("cs.AI", "cs.CL", "cs.CV", "cs.LG", "cs.RO", "cs.MA", "stat.ML")
_CATEGORY = re.compile(r"^[a-z\-]+(\.[A-Za-z\-]+)?$")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    discord_token: SecretStr | None = None
    dev_guild_id: int | None = None
    discord_api_base: str | None = None  # e.g. a REST rate-limit proxy; default: Discord itself
    discord_gateway_url: str | None = None  # e.g. a gateway proxy; default: Discord itself
    database_path: Path = Path("./data/paperwatch.sqlite3")
    arxiv_categories: Annotated[tuple[str, ...], NoDecode] = DEFAULT_CATEGORIES
    poll_interval_minutes: int = Field(30, ge=1, le=24 * 60)
    backfill_days: int = Field(56, ge=1, le=3650)
    poll_overlap_hours: int = Field(120, ge=1, le=24 * 30)
    arxiv_api_url: str = "https://export.arxiv.org/api/query"
    arxiv_rss_url: str = "https://rss.arxiv.org/rss"
    arxiv_min_interval_seconds: float = Field(3.0, ge=0.0)
    arxiv_page_size: int = Field(1000, ge=1, le=2000)
    arxiv_contact: str = "paperwatch-bot@users.noreply.github.com"
    deliver_interval_seconds: int = Field(60, ge=5, le=3600)
    posts_per_channel_per_cycle: int = Field(10, ge=1, le=50)
    abstract_chars: int = Field(700, ge=100, le=3000)
    log_level: str = "INFO"

    @field_validator("arxiv_categories", mode="before")
    @classmethod
    def _split_categories(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(part for part in re.split(r"[\s,]+", value) if part)
        return value

    @field_validator("arxiv_categories")
    @classmethod
    def _check_categories(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("name at least one arXiv category, e.g. cs.LG")
        bad = [c for c in value if not _CATEGORY.match(c)]
        if bad:
            raise ValueError(f"not arXiv categories: {', '.join(bad)} (expected names like cs.LG or stat.ML)")
        return tuple(dict.fromkeys(value))

    @field_validator("log_level")
    @classmethod
    def _check_level(cls, value: str) -> str:
        value = value.upper()
        if value not in logging.getLevelNamesMapping():
            raise ValueError("use DEBUG, INFO, WARNING or ERROR")
        return value

    @property
    def user_agent(self) -> str:
        return f"paperwatch/0.1 (Discord research-alert bot; mailto:{self.arxiv_contact})"


def load_settings(**overrides: object) -> Settings:
    """Read and validate settings once; a bad value becomes one ConfigError naming the variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            name = "_".join(str(p) for p in err["loc"]).upper() or "settings"
            lines.append(f"{name}: {err['msg'].removeprefix('Value error, ')}")
        raise ConfigError("invalid settings (see .env.example): " + "; ".join(lines)) from None


def require_token(settings: Settings) -> str:
    if settings.discord_token is None or not settings.discord_token.get_secret_value().strip():
        raise ConfigError(
            "DISCORD_TOKEN is not set: put your bot token in the environment or in .env (see .env.example)"
        )
    return settings.discord_token.get_secret_value().strip()
