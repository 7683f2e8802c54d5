"""Fixtures of the command line's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.process import settings_free_folder


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`main()` in this process, as from a fresh folder: no .env, none of the developer's settings."""
    return settings_free_folder(tmp_path, monkeypatch)
