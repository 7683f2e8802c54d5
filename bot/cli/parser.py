"""The command line's words: commands, options and their checks, exit codes, and how we were called."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from bot.config import (
    MAX_BRIEF_WEEKS,
    MAX_HISTORY_DAYS,
    MAX_MATCH_LIMIT,
    MAX_STATS_WEEKS,
    check_categories,
)
from bot.momentum import MAX_WEEKS
from bot.topics.relevance import DEFAULT_LABELS, HALVES, LABELS_FILE, RECORDS_FILE

EXIT_BAD_INPUT = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a reader that stops early (`| head`) gets from any Unix tool
EXIT_CODES = """Exit codes:
  0    done
  1    an unexpected error
  2    bad input or settings (the message says which)
  3    arXiv or Discord could not be reached (nothing is lost: run it again)
  130  interrupted"""


def program_name() -> str:
    """How the user called us, for help and hints: the `paperwatch` console script or `python -m bot`."""
    return "paperwatch" if Path(sys.argv[0]).stem == "paperwatch" else "python -m bot"


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """A mistyped command gets one line (argparse prints the whole usage first) and the bad-input code."""
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def whole_number(low: int, high: int, meaning: str = "") -> Callable[[str], int]:
    """An argparse type for an integer in [low, high]; `meaning` says where the bound comes from."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low} to {high}{meaning}, not {value}")
        return value

    return parse


def _category(text: str) -> str:
    try:
        return check_categories([text])[0]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _date(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2026-06-01") from None


def build_parser() -> argparse.ArgumentParser:
    prog = program_name()
    parser = Parser(
        prog=prog,
        description="paperwatch: follow arXiv topics in Discord. Without a command, runs the bot.",
        epilog=(
            f"Try `{prog} demo` first: no token, no internet.\n\n"
            "Settings come from the environment, then from one .env file: the one\n"
            "PAPERWATCH_ENV_FILE names, else ./.env. See .env.example for every one.\n\n" + EXIT_CODES
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run the Discord bot (the default; needs DISCORD_TOKEN)")

    poll = sub.add_parser("poll", help="fetch new papers of the watched categories from arXiv and store them")
    poll.add_argument("--once", action="store_true", help="run one cycle, print what it stored, and exit")

    backfill = sub.add_parser("backfill", help="store the history of the watched categories (resumable)")
    backfill.add_argument(
        "--days",
        type=whole_number(1, MAX_HISTORY_DAYS, ", the cap BACKFILL_DAYS has too"),
        default=None,
        help=f"how many days back to fill, 1-{MAX_HISTORY_DAYS} (default: BACKFILL_DAYS, 56)",
    )
    backfill.add_argument(
        "--categories",
        nargs="+",
        type=_category,
        metavar="CAT",
        help="arXiv categories to fill (default: ARXIV_CATEGORIES)",
    )

    stats = sub.add_parser("stats", help="papers stored per category per week")
    stats.add_argument(
        "--weeks",
        type=whole_number(1, MAX_STATS_WEEKS),
        default=8,
        help=f"how many weeks back to show (1-{MAX_STATS_WEEKS}, default 8)",
    )

    momentum = sub.add_parser("momentum", help="how a topic is moving: the sentence, a sparkline, a chart")
    momentum.add_argument("topic", help='a catalog topic\'s name or slug, e.g. "RL Post-Training"')
    momentum.add_argument(
        "--weeks",
        type=whole_number(1, MAX_WEEKS),
        default=4,
        help=f"window length in weeks (1-{MAX_WEEKS}, default 4)",
    )
    momentum.add_argument(
        "--png", type=Path, metavar="FILE", help="also write the weekly chart to this PNG file"
    )

    sub.add_parser("topics", help="the catalog's tree of topics with their papers in the last four weeks")

    relevance = sub.add_parser(
        "relevance",
        help="recall and precision of each catalog topic on hand-labelled papers, with every miss and false hit",
        description="Per-topic recall and precision of the catalog's queries on a labelled folder (a topic "
        "matches a paper when its own query or a sub-topic's does, as followers receive it), then every miss "
        "and false hit. Precision is n/a for a topic with no labelled negatives.",
    )
    relevance.add_argument(
        "--labels",
        type=Path,
        metavar="DIR",
        default=DEFAULT_LABELS,
        help=f"folder with {RECORDS_FILE} and {LABELS_FILE} (default: the set in bot/topics/labels)",
    )
    relevance.add_argument("--topic", metavar="NAME", help="only this catalog topic (name or slug)")
    relevance.add_argument(
        "--half", choices=HALVES, help="only one fixed half of the records: tune queries on A, check on B"
    )

    watch = sub.add_parser(
        "watch", help="print a topic's new papers as cards in this terminal, as they arrive"
    )
    watch.add_argument("topic", help='a catalog topic\'s name or slug, e.g. "RL Post-Training"')
    watch.add_argument("--once", action="store_true", help="one poll, print what arrived, and exit")

    match = sub.add_parser("match", help="what an arXiv-syntax query matches in the stored history")
    match.add_argument("--query", required=True, help="e.g. 'ti:\"speculative decoding\" OR abs:medusa'")
    match.add_argument("--since", type=_date, help="only papers submitted on or after this day (YYYY-MM-DD)")
    match.add_argument(
        "--limit",
        type=whole_number(0, MAX_MATCH_LIMIT),
        default=10,
        help=f"how many of the newest matches to list (0-{MAX_MATCH_LIMIT}, default 10)",
    )

    ask = sub.add_parser(
        "ask",
        help="ask the stored papers: the abstracts' sentences that answer, each citing its paper",
        description="An answer quoted from the abstracts of the stored papers most relevant to the question "
        "(as /ask gives it), each sentence citing [n], then the numbered papers; with LLM_BASE_URL set, a short "
        "answer the model writes from those abstracts only, cited the same way.",
    )
    ask.add_argument("question", help='in words, e.g. "how is reward hacking reduced in RLHF?"')
    ask.add_argument("--topic", metavar="NAME", help="only papers of this catalog topic and its sub-topics")
    ask.add_argument(
        "--since",
        metavar="WHEN",
        help="only papers submitted since a day (YYYY-MM-DD) or a span (10d, 4w, 6m, 1y)",
    )

    brief = sub.add_parser(
        "brief",
        help="what moved in a topic: rising phrases, active authors, the papers that represent the period",
    )
    brief.add_argument("topic", help='a catalog topic\'s name or slug, e.g. "RL Post-Training"')
    brief.add_argument(
        "--weeks",
        type=whole_number(1, MAX_BRIEF_WEEKS),
        default=4,
        help=f"the period in weeks back from today (1-{MAX_BRIEF_WEEKS}, default 4), against twice as many before",
    )

    scorer = sub.add_parser(
        "scorer",
        help="the learned topic scorer: train it on the stored history now, or show each topic's status",
    )
    scorer.add_argument(
        "action",
        choices=("train", "status"),
        help="train: learn every topic's scorer now (the bot also does it daily); status: scored or query-only",
    )

    saved = sub.add_parser("saved", help="a member's reading list (papers saved with ⭐ on a card)")
    saved.add_argument(
        "--user",
        type=whole_number(1, 2**63 - 1, " (a Discord user id)"),
        required=True,
        help="the member's Discord user id",
    )
    saved.add_argument("--bibtex", action="store_true", help="print the list as BibTeX (e.g. > saved.bib)")

    migrate = sub.add_parser(
        "migrate-store",
        help="copy a deployment from its SQLite file into an empty PostgreSQL database (resumable)",
    )
    migrate.add_argument(
        "--from", dest="source", metavar="sqlite:///PATH", required=True, help="the SQLite database file"
    )
    migrate.add_argument(
        "--to", dest="target", metavar="postgresql://...", required=True, help="the empty PostgreSQL database"
    )

    demo = sub.add_parser(
        "demo",
        help="see paperwatch work in under a minute: the real bot on a loopback arXiv with real papers and a "
        "loopback Discord whose channel this terminal shows (no token, no internet, your settings and "
        "database untouched)",
    )
    demo.add_argument(
        "--png",
        type=Path,
        metavar="FILE",
        default=Path("paperwatch-demo.png"),
        help="where to write the momentum chart (default: paperwatch-demo.png here)",
    )
    return parser
