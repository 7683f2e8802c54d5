"""Command line: `python -m bot` runs the Discord bot; subcommands poll, backfill and inspect the history.

One module per group of commands: `pipeline` (poll, backfill, watch), `history` (stats, momentum, topics, match),
`relevance`, `demo`; `parser` holds the words and exit codes, `common` the steps they share. Commands call the services (and
the pipeline that bot/context.py builds) and print what they return.

Every failure ends in one line on stderr and an exit code scripts can rely on (EXIT_CODES); never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from bot.cli.ask import cmd_ask, cmd_brief
from bot.cli.demo import cmd_demo
from bot.cli.history import cmd_match, cmd_momentum, cmd_stats, cmd_topics
from bot.cli.migrate_store import cmd_migrate_store
from bot.cli.parser import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_UNREACHABLE,
    build_parser,
)
from bot.cli.pipeline import cmd_backfill, cmd_poll, cmd_watch
from bot.cli.relevance import cmd_relevance
from bot.cli.saved import cmd_saved
from bot.cli.scorer import cmd_scorer
from bot.clock import Clock
from bot.config import Settings, load_settings
from bot.errors import PaperwatchError, Unreachable

# Loggers that speak per request, per job run or per SQL statement (aiosqlite logs each statement with its
# parameters at DEBUG): noise at best, server and member ids in the log at worst.
QUIET_LOGGERS = ("apscheduler", "httpx", "aiosqlite")


def cmd_run(settings: Settings) -> int:
    from bot.roles import run_roles  # imported late: the CLI's other commands need no Discord

    return run_roles(settings)


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
    # While PostgreSQL restarts, asyncpg's pool warns with a traceback on each reconnection it tries; the store
    # says it in one line per interrupted job (bot/store/postgres/database.py).
    logging.getLogger("asyncpg.pool").setLevel(max(logging.ERROR, logging.getLogger().level))


def dispatch(args: argparse.Namespace, clock: Clock | None) -> int:
    if args.command == "demo":  # the demo reads no settings: it must work on any install, as shipped
        configure_logging("WARNING")
        return asyncio.run(cmd_demo(args.png, clock))
    if args.command == "migrate-store":  # reads its two addresses only: no settings, no token
        configure_logging("WARNING")
        return asyncio.run(cmd_migrate_store(args.source, args.target))
    if args.command == "relevance":  # reads the catalog and labelled files only, never settings
        return cmd_relevance(args.labels, args.topic, args.half)
    settings = load_settings()
    configure_logging(settings.log_level)
    match args.command:
        case None | "run":
            return cmd_run(settings)
        case "poll":
            return asyncio.run(cmd_poll(settings, args.once, clock))
        case "backfill":
            return asyncio.run(cmd_backfill(settings, args.days, args.categories, clock))
        case "stats":
            return asyncio.run(cmd_stats(settings, args.weeks, clock))
        case "momentum":
            return asyncio.run(cmd_momentum(settings, args.topic, args.weeks, args.png, clock))
        case "topics":
            return asyncio.run(cmd_topics(settings, clock))
        case "watch":
            return asyncio.run(cmd_watch(settings, args.topic, args.once, clock))
        case "match":
            return asyncio.run(cmd_match(settings, args.query, args.since, args.limit, clock))
        case "ask":
            return asyncio.run(cmd_ask(settings, args.question, args.topic, args.since, clock))
        case "brief":
            return asyncio.run(cmd_brief(settings, args.topic, args.weeks, clock))
        case "scorer":
            return asyncio.run(cmd_scorer(settings, args.action, clock))
        case "saved":
            return asyncio.run(cmd_saved(settings, args.user, args.bibtex, clock))
    raise AssertionError(f"unhandled command {args.command!r}")


def main(argv: Sequence[str] | None = None, *, clock: Clock | None = None) -> int:
    """Run one command; `clock` is injected by tests (time passes without sleeping)."""
    args = build_parser().parse_args(argv)
    try:
        code = dispatch(args, clock)
        sys.stdout.flush()  # a reader that went away (`| head`) shows here, inside the handler below
        return code
    except Unreachable as exc:
        print(f"paperwatch: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except PaperwatchError as exc:
        print(f"paperwatch: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("paperwatch: interrupted; progress so far is saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that flush cannot fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


__all__ = ["EXIT_BAD_INPUT", "main"]
