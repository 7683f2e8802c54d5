"""Settings from the environment and `.env`, validated once at start. `.env.example` documents each one.

Where things are found never depends on the folder a command runs in, except for one `.env` file:
- settings come from the environment first, then from one `.env`: the file named by PAPERWATCH_ENV_FILE, or
  else `.env` in the current folder;
- a relative DATABASE_PATH (the default is one) is resolved against the settings folder: the folder of that
  `.env`, or the per-user data folder (`$XDG_DATA_HOME/paperwatch`, `~/.local/share/paperwatch`) without one.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.errors import ConfigError

DEFAULT_CATEGORIES = ("cs.AI", "cs.CL", "cs.CV", "cs.LG", "cs.RO", "cs.MA", "stat.ML")
_CATEGORY = re.compile(r"^[a-z\-]+(\.[A-Za-z\-]+)?$")

# Bounds on numbers an operator or a user gives, one definition each (settings, CLI and commands share them).
MAX_HISTORY_DAYS = 3650  # how far back backfill reaches (BACKFILL_DAYS, `backfill --days`)
MAX_STATS_WEEKS = MAX_HISTORY_DAYS // 7 + 1  # `stats --weeks`: the whole history a backfill can bring
MAX_MATCH_LIMIT = 1000  # papers `match --limit` lists
MAX_BRIEF_WEEKS = 12  # the period /brief and `brief --weeks` sum up

ENV_FILE_VARIABLE = "PAPERWATCH_ENV_FILE"
DEFAULT_DATABASE = Path("data/paperwatch.sqlite3")

# The address every install once shipped with, and domains that receive no mail: never a way to reach anyone.
_PLACEHOLDER_CONTACT = "paperwatch-bot@users.noreply.github.com"
_NO_MAIL_DOMAINS = ("example.com", "example.net", "example.org", "users.noreply.github.com")
_NO_MAIL_SUFFIXES = (".example", ".invalid", ".test", ".localhost", ".local")
ROLES = ("gateway", "poll", "deliver")  # what a process does (ROLES); see README "Running at scale"

_EMAIL = re.compile(r"^[^@\s<>()\[\],;:\"]+@([A-Za-z0-9\-]+(\.[A-Za-z0-9\-]+)+)$")


def check_categories(value: Iterable[str]) -> tuple[str, ...]:
    """arXiv category names, deduplicated in order; ValueError names the bad ones."""
    names = tuple(value)
    if not names:
        raise ValueError("name at least one arXiv category, e.g. cs.LG")
    bad = [c for c in names if not _CATEGORY.match(c)]
    if bad:
        raise ValueError(f"not arXiv categories: {', '.join(bad)} (expected names like cs.LG or stat.ML)")
    return tuple(dict.fromkeys(names))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    discord_token: SecretStr | None = None
    dev_guild_id: int | None = None
    discord_api_base: str | None = None  # e.g. a REST rate-limit proxy; default: Discord itself
    discord_gateway_url: str | None = None  # e.g. a gateway proxy; default: Discord itself
    database_path: Path = DEFAULT_DATABASE  # relative: see the module docstring (load_settings resolves it)
    database_url: SecretStr | None = None  # postgresql://...: the PostgreSQL store instead of the SQLite file
    arxiv_categories: Annotated[tuple[str, ...], NoDecode] = DEFAULT_CATEGORIES
    poll_interval_minutes: int = Field(30, ge=1, le=24 * 60)
    backfill_days: int = Field(56, ge=1, le=MAX_HISTORY_DAYS)
    poll_overlap_hours: int = Field(120, ge=1, le=24 * 30)
    arxiv_api_url: str = "https://export.arxiv.org/api/query"
    arxiv_rss_url: str = "https://rss.arxiv.org/rss"
    arxiv_min_interval_seconds: float = Field(3.0, ge=0.0)
    arxiv_request_deadline_seconds: float = Field(180.0, ge=5.0, le=3600.0)
    arxiv_page_size: int = Field(1000, ge=1, le=2000)
    arxiv_contact: str = ""  # required to poll arXiv itself: see require_contact
    deliver_interval_seconds: int = Field(60, ge=5, le=3600)
    posts_per_channel_per_cycle: int = Field(10, ge=1, le=50)
    abstract_chars: int = Field(700, ge=100, le=3000)
    log_level: str = "INFO"
    llm_base_url: str = ""  # an OpenAI-compatible API's base, e.g. http://127.0.0.1:11434/v1; empty: none
    llm_model: str = ""
    llm_api_key: SecretStr | None = None
    roles: Annotated[tuple[str, ...], NoDecode] = ROLES
    delivery_lease_seconds: int = Field(60, ge=2, le=3600)  # how long a deliver worker holds a channel
    discord_global_rate_limit: int = Field(50, ge=1, le=100_000)  # requests/s per bot token, all processes
    shard_count: int | None = Field(None, ge=1, le=10000)  # the gateway's shards across every process
    shard_ids: Annotated[tuple[int, ...], NoDecode] = ()  # the shards this process runs (empty: all of them)

    _env_file_read: Path | None = PrivateAttr(None)

    @field_validator("arxiv_categories", mode="before")
    @classmethod
    def _split_categories(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(part for part in re.split(r"[\s,]+", value) if part)
        return value

    @field_validator("arxiv_categories")
    @classmethod
    def _check_categories(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return check_categories(value)

    @field_validator("roles", mode="before")
    @classmethod
    def _split_roles(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(part.strip().lower() for part in value.split(",") if part.strip())
        return value

    @field_validator("roles")
    @classmethod
    def _check_roles(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [r for r in value if r not in ROLES]
        if unknown or not value:
            named = f"unknown role {', '.join(map(repr, unknown))}: " if unknown else ""
            raise ValueError(f"{named}name one or more of {', '.join(ROLES)}, comma-separated")
        return tuple(r for r in ROLES if r in value)  # in the one order, once each

    @field_validator("shard_ids", mode="before")
    @classmethod
    def _split_shard_ids(cls, value: object) -> object:
        if isinstance(value, str):
            parts = [part.strip() for part in value.split(",") if part.strip()]
            if not all(part.isdigit() for part in parts):
                raise ValueError("give shard numbers, comma-separated, e.g. 0,1")
            value = tuple(int(part) for part in parts)
        return value

    @model_validator(mode="after")
    def _shards_within_count(self) -> Settings:
        if self.shard_ids and self.shard_count is None:
            raise ValueError("SHARD_IDS needs SHARD_COUNT, the number of shards across every process")
        outside = [i for i in self.shard_ids if self.shard_count is not None and i >= self.shard_count]
        if outside:
            raise ValueError(
                f"SHARD_IDS {', '.join(map(str, outside))} not below SHARD_COUNT={self.shard_count} "
                "(shards are numbered from 0)"
            )
        return self

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        url = value.get_secret_value().strip()
        try:
            parts = urlsplit(url)
            _ = parts.port  # reading it checks that it is a number
            scheme = parts.scheme
        except ValueError:
            scheme = ""  # an unreadable address (a port that is no number, a broken [IPv6] host)
        if scheme not in ("postgresql", "postgres"):
            # The value may hold a password: say what is expected, never echo it.
            raise ValueError(
                "expected a PostgreSQL address, postgresql://user:password@host:port/database "
                "(leave it unset to use the SQLite file at DATABASE_PATH)"
            )
        return SecretStr(url)

    @field_validator("log_level")
    @classmethod
    def _check_level(cls, value: str) -> str:
        value = value.upper()
        if value not in logging.getLevelNamesMapping():
            raise ValueError("use DEBUG, INFO, WARNING or ERROR")
        return value

    @field_validator("arxiv_contact")
    @classmethod
    def _strip_contact(cls, value: str) -> str:
        return value.strip()

    @field_validator("llm_base_url")
    @classmethod
    def _check_llm_url(cls, value: str) -> str:
        value = value.strip()
        if value and (urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).hostname):
            raise ValueError("give the API's base URL, e.g. http://127.0.0.1:11434/v1 (or leave it empty)")
        return value

    @model_validator(mode="after")
    def _llm_needs_model(self) -> Settings:
        if self.llm_base_url and not self.llm_model.strip():
            raise ValueError("LLM_MODEL: name the model to ask at LLM_BASE_URL, e.g. llama3.1:8b")
        return self

    @property
    def env_file(self) -> Path | None:
        """The `.env` file these settings were read from, if any."""
        return self._env_file_read

    @property
    def database(self) -> Path | str:
        """Where the store is: the PostgreSQL URL when DATABASE_URL is set, else the SQLite file."""
        return self.database_url.get_secret_value() if self.database_url else self.database_path

    @property
    def database_shown(self) -> str:
        """The database, fit to show (a URL without its password)."""
        return without_credentials(str(self.database))

    @property
    def user_agent(self) -> str:
        contact = f"; mailto:{self.arxiv_contact}" if self.arxiv_contact else ""
        return f"paperwatch/0.1 (Discord research-alert bot{contact})"


def user_data_dir() -> Path:
    """The per-user data folder (XDG): where settings without a `.env` keep the database."""
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    return (
        Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    ) / "paperwatch"


def find_env_file() -> Path | None:
    """The one `.env` file settings are read from: PAPERWATCH_ENV_FILE's, else `.env` in the current folder."""
    named = os.environ.get(ENV_FILE_VARIABLE, "").strip()
    if named:
        path = Path(named).expanduser().absolute()
        if not path.is_file():
            raise ConfigError(f"{ENV_FILE_VARIABLE} names {path}, which is not a file")
        return path
    local = Path.cwd() / ".env"
    return local if local.is_file() else None


def settings_folder(env_file: Path | None) -> Path:
    """What a relative DATABASE_PATH is relative to: the `.env`'s folder, else the per-user data folder."""
    return env_file.parent if env_file is not None else user_data_dir()


def load_settings(**overrides: Any) -> Settings:
    """Read and validate settings once; a bad value becomes one ConfigError naming the variable.

    `_env_file` overrides where `.env` is looked for (None: read none); by default find_env_file decides.
    The database path comes back absolute."""
    env_file: Path | None = overrides.pop("_env_file") if "_env_file" in overrides else find_env_file()
    try:
        settings = Settings(_env_file=env_file, **overrides)  # type: ignore[call-arg]
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            name = "_".join(str(p) for p in err["loc"]).upper() or "settings"
            lines.append(f"{name}: {err['msg'].removeprefix('Value error, ')}")
        where = f" in the environment or {env_file}" if env_file else ""
        raise ConfigError(f"invalid settings{where} (see .env.example): " + "; ".join(lines)) from None
    path = settings.database_path.expanduser()
    if not path.is_absolute():
        path = settings_folder(env_file) / path
    resolved = settings.model_copy(update={"database_path": Path(os.path.normpath(path))})
    resolved._env_file_read = env_file
    return resolved


def require_token(settings: Settings) -> str:
    if settings.discord_token is None or not settings.discord_token.get_secret_value().strip():
        raise ConfigError(
            "DISCORD_TOKEN is not set: put your bot token in the environment or in .env (see .env.example)"
        )
    return settings.discord_token.get_secret_value().strip()


def is_loopback_url(url: str) -> bool:
    """Whether a URL points at this machine's loopback interface (the demo's arXiv, the tests' fakes)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def without_credentials(url: str) -> str:
    """A URL fit to show: any user:password@ removed."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


def contact_problem(contact: str) -> str | None:
    """Why an ARXIV_CONTACT cannot reach anyone, or None when it looks like a real address."""
    if not contact:
        return "ARXIV_CONTACT is not set"
    if contact.lower() == _PLACEHOLDER_CONTACT:
        return f"ARXIV_CONTACT is still the placeholder {contact}"
    match = _EMAIL.match(contact)
    if match is None:
        return f"ARXIV_CONTACT={contact!r} is not an e-mail address"
    domain = match.group(1).lower()
    if domain in _NO_MAIL_DOMAINS or domain.endswith(_NO_MAIL_SUFFIXES):
        return f"ARXIV_CONTACT={contact!r} is at {domain}, which receives no mail"
    return None


def require_contact(settings: Settings) -> None:
    """Before any request to arXiv: arXiv asks API clients for a way to reach their operator. A loopback
    ARXIV_API_URL (the demo, the tests) is never arXiv, so it needs none."""
    if is_loopback_url(settings.arxiv_api_url):
        return
    problem = contact_problem(settings.arxiv_contact)
    if problem is not None:
        raise ConfigError(
            f"{problem}: arXiv asks every API client for a contact e-mail in its User-Agent, to reach "
            "the operator before blocking a misbehaving client. Set ARXIV_CONTACT=you@your-lab.org "
            "(an address you read) in .env or the environment, then run again."
        )
