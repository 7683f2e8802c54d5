"""`python -m bot` and the `paperwatch` script: the command line, in bot/cli/."""

from __future__ import annotations

import sys

from bot.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
