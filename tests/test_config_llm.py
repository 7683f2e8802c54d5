"""The optional language model's settings: off by default, checked at start, the key never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import load_settings
from bot.errors import ConfigError
from tests.cli.process import run_cli


def test_the_model_is_off_by_default_and_checked_when_set() -> None:
    assert load_settings(_env_file=None).llm_base_url == ""
    with pytest.raises(ConfigError, match="LLM_BASE_URL: give the API's base URL"):
        load_settings(_env_file=None, llm_base_url="localhost:11434")
    with pytest.raises(ConfigError, match="LLM_MODEL: name the model to ask at LLM_BASE_URL"):
        load_settings(_env_file=None, llm_base_url="http://127.0.0.1:11434/v1")
    settings = load_settings(
        _env_file=None, llm_base_url="http://127.0.0.1:11434/v1", llm_model="m", llm_api_key="sk-hidden-1"
    )
    assert "sk-hidden-1" not in repr(settings) and "sk-hidden-1" not in str(settings)


async def test_a_bad_llm_setting_stops_the_cli_with_one_line_naming_it(tmp_path: Path) -> None:
    env = {"LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_API_KEY": "sk-hidden-2"}
    code, _, err = await run_cli("ask", "anything", env=env, cwd=tmp_path)
    assert code == 2 and "LLM_MODEL" in err and "Traceback" not in err and "sk-hidden-2" not in err
