"""Where the read-only shared material lives: `../shared` beside the checkout (as in CI), or PAPERWATCH_SHARED."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("PAPERWATCH_SHARED") or Path(__file__).resolve().parents[2] / "shared")
FIXTURES = SHARED / "fixtures" / "arxiv"
OPENAPI_SPEC = SHARED / "reference" / "discord-openapi.json"
