from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import (
    MAX_HISTORY_DAYS,
    Settings,
    load_settings,
    require_contact,
    require_token,
    without_credentials,
)
from bot.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


def test_env_example_lists_every_setting_with_its_default() -> None:
    example = REPO / ".env.example"
    listed = re.findall(r"^([A-Z_]+)=", example.read_text(), re.M)
    assert sorted(listed) == sorted(name.upper() for name in Settings.model_fields)
    # read as a .env file, the example changes nothing: every value it shows is the default
    assert Settings(_env_file=example) == Settings(_env_file=None)


def test_categories_split_on_spaces_and_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARXIV_CATEGORIES", "cs.LG, stat.ML  cs.LG")
    assert load_settings(_env_file=None).arxiv_categories == ("cs.LG", "stat.ML")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ARXIV_CATEGORIES", "cs.LG not/a-category", "not arXiv categories"),
        ("POLL_INTERVAL_MINUTES", "0", "POLL_INTERVAL_MINUTES"),
        ("LOG_LEVEL", "chatty", "LOG_LEVEL"),
    ],
)
def test_bad_values_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        load_settings(_env_file=None)


def test_token_is_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "  abc.def.ghi  ")
    settings = load_settings(_env_file=None)
    assert "abc.def" not in repr(settings) and "abc.def" not in str(settings.model_dump())
    assert require_token(settings) == "abc.def.ghi"
    monkeypatch.setenv("DISCORD_TOKEN", " ")
    with pytest.raises(ConfigError, match="DISCORD_TOKEN is not set"):
        require_token(load_settings(_env_file=None))


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean environment, run from a folder that holds no .env."""
    for name in ("DATABASE_PATH", "PAPERWATCH_ENV_FILE", "ARXIV_CONTACT", "ARXIV_API_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def test_relative_database_path_is_relative_to_its_env_file(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / ".env").write_text("DATABASE_PATH=db/pw.sqlite3\n")
    monkeypatch.setenv("PAPERWATCH_ENV_FILE", str(site / ".env"))
    settings = load_settings()
    assert settings.database_path == site / "db" / "pw.sqlite3"
    assert settings.env_file == site / ".env"
    monkeypatch.delenv("PAPERWATCH_ENV_FILE")
    monkeypatch.chdir(site)  # the same .env found in the current folder: the same database
    assert load_settings().database_path == site / "db" / "pw.sqlite3"
    monkeypatch.setenv("DATABASE_PATH", "other.sqlite3")  # the environment's relative path: the same rule
    assert load_settings().database_path == site / "other.sqlite3"


def test_without_env_file_the_database_is_in_the_user_data_folder(tmp_path: Path, elsewhere: Path) -> None:
    settings = load_settings()
    assert settings.env_file is None
    assert settings.database_path == tmp_path / "xdg" / "paperwatch" / "data" / "paperwatch.sqlite3"


def test_env_file_variable_must_name_a_file(
    tmp_path: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERWATCH_ENV_FILE", str(tmp_path / "missing.env"))
    with pytest.raises(ConfigError, match=r"PAPERWATCH_ENV_FILE names .*missing\.env, which is not a file"):
        load_settings()


def test_backfill_days_share_the_cli_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKFILL_DAYS", str(MAX_HISTORY_DAYS))
    assert load_settings(_env_file=None).backfill_days == MAX_HISTORY_DAYS == 3650
    monkeypatch.setenv("BACKFILL_DAYS", str(MAX_HISTORY_DAYS + 1))
    with pytest.raises(ConfigError, match="BACKFILL_DAYS"):
        load_settings(_env_file=None)


@pytest.mark.parametrize(
    ("contact", "problem"),
    [
        ("", "ARXIV_CONTACT is not set"),
        ("paperwatch-bot@users.noreply.github.com", "ARXIV_CONTACT is still the placeholder"),
        ("someone", "is not an e-mail address"),
        ("me@lab", "is not an e-mail address"),
        ("you@example.org", "receives no mail"),
        ("ops@paperwatch.invalid", "receives no mail"),
    ],
)
def test_polling_arxiv_needs_a_real_contact(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch, contact: str, problem: str
) -> None:
    monkeypatch.setenv("ARXIV_CONTACT", contact)
    settings = load_settings()
    assert settings.arxiv_api_url == "https://export.arxiv.org/api/query"  # the shipped default
    with pytest.raises(ConfigError) as refused:
        require_contact(settings)
    message = str(refused.value)
    assert message.startswith("ARXIV_CONTACT") and problem in message.split(":")[0]
    assert "arXiv asks every API client for a contact e-mail in its User-Agent" in message
    assert "Set ARXIV_CONTACT=" in message


def test_urls_shown_in_messages_carry_no_credentials() -> None:
    assert without_credentials("http://user:s3cret@proxy.lab:8080/api/v10") == "http://proxy.lab:8080/api/v10"
    assert without_credentials("https://export.arxiv.org/api/query") == "https://export.arxiv.org/api/query"


def test_a_real_contact_goes_in_the_user_agent_and_loopback_needs_none(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARXIV_CONTACT", " ada@lab.example-university.edu ")
    settings = load_settings()
    require_contact(settings)
    assert settings.user_agent.endswith("; mailto:ada@lab.example-university.edu)")
    monkeypatch.delenv("ARXIV_CONTACT")
    for url in ("http://127.0.0.1:8080/api/query", "http://localhost/api/query", "http://[::1]:9/api/query"):
        monkeypatch.setenv("ARXIV_API_URL", url)
        require_contact(load_settings())  # the demo's and the tests' arXiv: never arXiv itself
    monkeypatch.setenv("ARXIV_API_URL", "http://arxiv-mirror.lab.org/api/query")
    with pytest.raises(ConfigError, match="ARXIV_CONTACT is not set"):
        require_contact(load_settings())
