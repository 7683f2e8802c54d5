from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import Settings, load_settings, require_token
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
