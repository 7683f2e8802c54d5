"""The command line as a user runs it: a real process, settings from the environment, a loopback arXiv."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sqlite3
import sys
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.__main__ import main
from bot.clock import FakeClock, SystemClock
from bot.config import MAX_HISTORY_DAYS, MAX_STATS_WEEKS
from bot.loopback.arxiv import LoopbackArxiv, RecordedRequest
from bot.sources.arxiv_api import parse_feed
from bot.store import open_store
from tests.cli.process import REPO, clean_env, run_cli
from tests.shared_files import FIXTURES


async def test_without_token_exits_with_one_clear_line(tmp_path: Path) -> None:
    code, out, err = await run_cli(env={"DATABASE_PATH": str(tmp_path / "db.sqlite3")}, cwd=tmp_path)
    assert code != 0 and out == ""
    assert err.strip().splitlines() == [
        "paperwatch: DISCORD_TOKEN is not set: put your bot token in the environment or in .env (see .env.example)"
    ]


async def test_bad_setting_names_the_variable(tmp_path: Path) -> None:
    code, _, err = await run_cli("stats", env={"POLL_INTERVAL_MINUTES": "often"}, cwd=tmp_path)
    assert code == 2 and "POLL_INTERVAL_MINUTES" in err and "Traceback" not in err


def submitted_an_hour_ago(document: bytes) -> bytes:
    """A recorded page with every submission an hour old: a poll keeps only what lies in the range it asked for."""
    stamp = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    return re.sub(rb"<published>[^<]*</published>", b"<published>" + stamp + b"</published>", document)


async def test_poll_once_stores_every_fixture_paper_with_every_field(tmp_path: Path) -> None:
    current = submitted_an_hour_ago((FIXTURES / "api_query_testing_100.xml").read_bytes())
    legacy = submitted_an_hour_ago((FIXTURES / "api_query_legacy_10.xml").read_bytes())
    expected = parse_feed(current).papers + parse_feed(legacy).papers
    db = tmp_path / "data" / "paperwatch.sqlite3"
    async with LoopbackArxiv() as arxiv:
        arxiv.serve_raw_next(current)
        arxiv.serve_raw_next(legacy)
        code, out, err = await run_cli(
            "poll",
            "--once",
            env={
                "ARXIV_API_URL": arxiv.url,
                "ARXIV_RSS_URL": arxiv.rss_url,
                "DATABASE_PATH": str(db),
                "ARXIV_MIN_INTERVAL_SECONDS": "0",
                "ARXIV_CATEGORIES": "cs.LG cs.SE",
            },
            cwd=tmp_path,
        )
    assert code == 0, err
    assert "110 new" in out and "cycle complete" in out
    store = await open_store(db)
    try:
        assert await store.papers.count() == len(expected) == 110
        for paper in expected:
            assert await store.papers.get(paper.arxiv_id) == paper
    finally:
        await store.close()


async def test_stats_prints_a_week_by_category_table(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = await open_store(db)
    from datetime import timedelta

    from tests.factories import make_paper

    now = SystemClock().now()
    await store.papers.upsert(
        [make_paper(i, published=now - timedelta(days=i), categories=("cs.CL",)) for i in range(10)],
        seen_at=now,
    )
    await store.close()
    code, out, err = await run_cli("stats", "--weeks", "3", env={"DATABASE_PATH": str(db)}, cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("10 papers stored")
    assert lines[1].split() == ["week", "cs.CL"]
    assert sum(int(line.split()[1]) for line in lines[2:]) == 10
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT COUNT(*) FROM papers").fetchone()[0] == 10


async def test_momentum_prints_the_sentence_and_writes_the_chart(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from tests.factories import make_paper

    db = tmp_path / "db.sqlite3"
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    rl = "GRPO post-training of language models for reasoning"
    # 49 papers in the last four weeks, 16 in the four before; kept two days away from every window edge.
    current = [
        make_paper(i, title=rl, published=today - timedelta(days=3 + i % 23, hours=5)) for i in range(49)
    ]
    previous = [make_paper(100 + i, title=rl, published=today - timedelta(days=31 + i)) for i in range(16)]
    others = [
        make_paper(200 + i, title="Graph colouring bounds", published=today - timedelta(days=3 + i % 20))
        for i in range(9751)
    ]
    store = await open_store(db)
    await store.papers.upsert(current + previous + others, seen_at=datetime.now(UTC))
    await store.close()
    png = tmp_path / "chart.png"
    code, out, err = await run_cli(
        "momentum",
        "RL Post-Training",
        "--png",
        str(png),
        env={"DATABASE_PATH": str(db), "ARXIV_CATEGORIES": "cs.LG cs.AI"},
        cwd=tmp_path,
    )
    assert code == 0, err
    assert out.splitlines()[0] == (
        "RL Post-Training: 49 papers in the last four weeks, up 206% on the four weeks before. "
        "0.5% of all new papers."
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


async def test_match_lists_what_a_query_finds(tmp_path: Path) -> None:
    from tests.factories import make_paper

    db = tmp_path / "db.sqlite3"
    store = await open_store(db)
    papers = [
        make_paper(1, title="Speculative decoding with Medusa heads"),
        make_paper(2, title="Graph colouring"),
    ]
    await store.papers.upsert(papers, seen_at=SystemClock().now())
    await store.close()
    code, out, err = await run_cli(
        "match", "--query", "ti:medusa", env={"DATABASE_PATH": str(db)}, cwd=tmp_path
    )
    assert code == 0, err
    assert out.splitlines()[0] == "1 stored paper matches 'ti:medusa'"
    assert "Speculative decoding with Medusa heads" in out
    code, _, err = await run_cli(
        "match", "--query", "ti:(medusa", env={"DATABASE_PATH": str(db)}, cwd=tmp_path
    )
    assert code == 2 and "position" in err and "Traceback" not in err


async def test_watch_prints_new_matching_papers_as_cards(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from tests.factories import make_paper

    now = datetime.now(UTC)
    grpo = make_paper(
        1, title="GRPO post-training for reasoning language models", published=now - timedelta(hours=2)
    )
    other = make_paper(2, title="Graph colouring bounds", published=now - timedelta(hours=3))
    async with LoopbackArxiv([grpo, other]) as arxiv:
        code, out, err = await run_cli(
            "watch",
            "RL Post-Training",
            "--once",
            env={
                "ARXIV_API_URL": arxiv.url,
                "ARXIV_RSS_URL": arxiv.rss_url,
                "DATABASE_PATH": str(tmp_path / "db.sqlite3"),
                "ARXIV_MIN_INTERVAL_SECONDS": "0",
                "ARXIV_CATEGORIES": "cs.LG cs.AI",
            },
            cwd=tmp_path,
        )
    assert code == 0, err
    assert out.startswith("Watching RL Post-Training: ")
    assert "GRPO post-training for reasoning language models" in out
    assert "Graph colouring bounds" not in out
    assert f"Database: {tmp_path / 'db.sqlite3'}" in out
    # a fresh database: the first poll's papers are history, shown as the latest matches and not as new ones
    assert out.rstrip().endswith("0 new for RL Post-Training")


# -- operators' mistakes and an unreachable world: one line, a reliable exit code, never a traceback -------


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in this process with a fake clock: retries back off without sleeping."""
    try:
        code = main(list(args), clock=FakeClock())
    except SystemExit as exc:  # argparse's way out
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on: connections are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def created_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("stats", "--weeks", "0"), f"argument --weeks: must be 1 to {MAX_STATS_WEEKS}, not 0"),
        (("stats", "--weeks", "1000000000"), f"must be 1 to {MAX_STATS_WEEKS}, not 1000000000"),
        (("momentum", "RL Post-Training", "--weeks", "0"), "argument --weeks: must be 1 to 52, not 0"),
        (("momentum", "RL Post-Training", "--weeks", "53"), "must be 1 to 52, not 53"),
        (
            ("backfill", "--days", "1000000"),
            f"argument --days: must be 1 to {MAX_HISTORY_DAYS}, the cap BACKFILL_DAYS has too, not 1000000",
        ),
        (
            ("backfill", "--days", "0"),
            f"must be 1 to {MAX_HISTORY_DAYS}, the cap BACKFILL_DAYS has too, not 0",
        ),
        (("backfill", "--days", "many"), "argument --days: 'many' is not a whole number"),
        (
            ("backfill", "--categories", "cs.LG", "not/a-category"),
            "not/a-category (expected names like cs.LG or stat.ML)",
        ),
        (("match", "--query", "ti:x", "--limit", "-1"), "argument --limit: must be 0 to 1000, not -1"),
        (("match", "--query", "ti:x", "--since", "2026-13-01"), "'2026-13-01' is not a day like 2026-06-01"),
    ],
)
def test_a_bad_number_gets_one_line_and_the_bad_input_code(
    cli_env: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, out, err = run_main(capsys, *args)
    assert (code, out) == (2, "")
    assert err.endswith(f"{message} (see `python -m bot {args[0]} --help`)\n")
    assert len(err.splitlines()) == 1
    assert created_files(cli_env) == []  # refused before anything is opened


async def test_backfill_past_the_cap_as_a_process_says_so_without_a_traceback(tmp_path: Path) -> None:
    code, out, err = await run_cli("backfill", "--days", "1000000", env={}, cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "python -m bot backfill: argument --days: must be 1 to 3650, the cap BACKFILL_DAYS has too, "
        "not 1000000 (see `python -m bot backfill --help`)"
    ]


def test_help_documents_the_exit_codes(cli_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "--help")
    assert code == 0
    assert out.endswith(
        "Exit codes:\n  0    done\n  1    an unexpected error\n  2    bad input or settings (the message says which)\n"
        "  3    arXiv or Discord could not be reached (nothing is lost: run it again)\n  130  interrupted\n"
    )


@pytest.mark.parametrize(
    ("args", "again"),
    [
        (("poll", "--once"), "run `python -m bot poll --once` again; nothing was lost"),
        (("watch", "RL Post-Training", "--once"), "run `python -m bot watch` again; nothing was lost"),
    ],
)
def test_unreachable_arxiv_gets_one_line_that_fits_the_command(
    cli_env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    closed_port: int,
    args: tuple[str, ...],
    again: str,
) -> None:
    monkeypatch.setenv("ARXIV_API_URL", f"http://127.0.0.1:{closed_port}/api/query")
    monkeypatch.setenv("DATABASE_PATH", str(cli_env / "db.sqlite3"))
    code, out, err = run_main(capsys, *args)
    assert code == 3, err
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith(f"paperwatch: could not read arXiv at 127.0.0.1:{closed_port}: ")
    assert "did not answer after 5 tries (last: connection failed" in line
    assert line.endswith(f"Check the network connection and ARXIV_API_URL, then {again}")
    assert "next cycle" not in line


async def test_backfill_that_loses_arxiv_says_it_resumes_and_does(
    cli_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.factories import make_paper

    now = FakeClock().now()  # 2026-11-20 12:00 UTC: the days filled are Nov 16 to Nov 20
    papers = [make_paper(i, published=now.replace(hour=10) - timedelta(days=i)) for i in range(5)]
    db = cli_env / "db.sqlite3"
    async with LoopbackArxiv(papers) as arxiv:
        for name, value in {
            "ARXIV_API_URL": arxiv.url,
            "DATABASE_PATH": str(db),
            "ARXIV_MIN_INTERVAL_SECONDS": "0",
            "ARXIV_CATEGORIES": "cs.LG",
        }.items():
            monkeypatch.setenv(name, value)

        def lose_arxiv_at_the_third_day(request: RecordedRequest) -> None:
            if len(arxiv.requests) == 3:
                arxiv.fail_next(503, count=5)  # every try of the third day's request

        arxiv.on_request = lose_arxiv_at_the_third_day
        code, out, err = await asyncio.to_thread(run_main, capsys, "backfill", "--days", "4")
        assert code == 3, err
        [line] = err.splitlines()
        assert line.startswith(f"paperwatch: could not read arXiv at 127.0.0.1:{arxiv.port}: ")
        assert "(every day stored so far is kept)" in line
        assert line.endswith(
            "then run `python -m bot backfill` again with the same options: it resumes where it stopped"
        )
        assert "2 papers stored · 2 windows done, 3 left" in out
        async with await open_store(db) as store:
            assert await store.papers.count() == 2

        arxiv.on_request = None
        before = len(arxiv.requests)
        code, out, err = await asyncio.to_thread(run_main, capsys, "backfill", "--days", "4")
        assert code == 0, err
        assert len(arxiv.requests) - before == 3  # only the days not stored yet
        assert f"Done: 3 new papers; 5 papers in {db}" in out


@pytest.mark.parametrize(
    "contact", ["", "paperwatch-bot@users.noreply.github.com", "not-an-address", "me@example.com"]
)
@pytest.mark.parametrize(
    "args", [("poll", "--once"), ("backfill", "--days", "3"), ("watch", "RL Post-Training")]
)
def test_polling_arxiv_is_refused_without_a_real_contact(
    cli_env: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    closed_port: int,
    args: tuple[str, ...],
    contact: str,
) -> None:
    # arXiv's real address, as shipped; every request would go to a proxy that refuses, never to arXiv.
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(proxy, f"http://127.0.0.1:{closed_port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.setenv("ARXIV_CONTACT", contact)
    code, out, err = run_main(capsys, *args)
    assert (code, out) == (2, "")
    [line] = err.splitlines()
    assert line.startswith("paperwatch: ARXIV_CONTACT")
    assert "arXiv asks every API client for a contact e-mail in its User-Agent" in line
    assert created_files(cli_env) == []  # refused before any database or request


def test_a_real_contact_lets_the_poll_try_arxiv(
    cli_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(proxy, f"http://127.0.0.1:{closed_port}")  # arXiv "unreachable" through it
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.setenv("ARXIV_CONTACT", "ada@lab.example-university.edu")
    code, _, err = run_main(capsys, "poll", "--once")
    assert code == 3
    assert err.startswith("paperwatch: could not read arXiv at export.arxiv.org: ")


async def test_the_database_follows_its_env_file_wherever_the_command_runs(tmp_path: Path) -> None:
    from tests.factories import make_paper

    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    db = site / "data" / "pw.sqlite3"
    async with await open_store(db) as store:
        await store.papers.upsert([make_paper(i) for i in range(3)], seen_at=SystemClock().now())
    (site / ".env").write_text("DATABASE_PATH=data/pw.sqlite3\n")
    code, out, err = await run_cli("stats", env={"PAPERWATCH_ENV_FILE": str(site / ".env")}, cwd=elsewhere)
    assert code == 0, err
    assert out.startswith(f"3 papers stored in {db}; ")
    code, out, err = await run_cli("stats", env={}, cwd=site)  # the .env of the current folder
    assert code == 0, err
    assert out.startswith(f"3 papers stored in {db}; ")
    assert created_files(elsewhere) == []


@pytest.mark.parametrize(
    "args", [("stats",), ("momentum", "RL Post-Training"), ("topics",), ("match", "--query", "ti:x")]
)
def test_reading_commands_never_create_an_empty_database(
    cli_env: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    code, out, err = run_main(capsys, *args)
    expected = cli_env / "xdg-data" / "paperwatch" / "data" / "paperwatch.sqlite3"
    assert (code, out) == (2, "")
    assert err == (
        f"paperwatch: no database at {expected}: run `python -m bot backfill` to create one, or set "
        f"DATABASE_PATH to yours (a relative one is resolved against {expected.parents[1]})\n"
    )
    assert created_files(cli_env) == []


async def test_debug_logging_never_shows_sql_or_its_parameters(tmp_path: Path) -> None:
    from tests.factories import make_paper

    db = tmp_path / "db.sqlite3"
    async with await open_store(db) as store:
        await store.papers.upsert([make_paper(1, title="Medusa heads")], seen_at=SystemClock().now())
    code, out, err = await run_cli(
        "match", "--query", "ti:medusa", env={"DATABASE_PATH": str(db), "LOG_LEVEL": "DEBUG"}, cwd=tmp_path
    )
    assert code == 0, err
    assert "Medusa heads" in out
    assert "DEBUG" in err  # debug logging is on...
    assert "SELECT" not in err and "executing" not in err  # ...without the SQL
    assert "medusa" not in err.lower()  # ...nor its parameters


async def test_a_reader_that_stops_early_gets_no_broken_pipe_traceback(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    async with await open_store(db):
        pass
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` that has read what it wanted: every write meets a closed pipe
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "topics",
            env=clean_env({"DATABASE_PATH": str(db)}, tmp_path),
            cwd=tmp_path,
            stdout=write_end,
            stderr=asyncio.subprocess.PIPE,
        )
    finally:
        os.close(write_end)
    _, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 141  # 128 + SIGPIPE, as any Unix tool ends when its reader goes away
    assert err.decode() == ""


async def test_the_console_script_calls_itself_paperwatch(tmp_path: Path) -> None:
    entry = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["paperwatch"]
    module, function = entry.split(":")
    script = tmp_path / "bin" / "paperwatch"  # what pip writes for [project.scripts]
    script.parent.mkdir()
    script.write_text(
        f"import re, sys\nfrom {module} import {function}\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        f"    sys.exit({function}())\n"
    )
    for args, usage in (((), "usage: paperwatch [-h]"), (("stats",), "usage: paperwatch stats [-h]")):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            *args,
            "--help",
            env=clean_env({}, tmp_path),
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate()
        assert out.decode().startswith(usage)
        assert "python -m bot" not in out.decode()
    _, out, _ = await run_cli("--help", env={}, cwd=tmp_path)
    assert out.startswith("usage: python -m bot [-h]")


# -- the topic tree and the relevance report ------------------------------------------------------------------


def test_topics_prints_the_catalog_as_a_tree(
    cli_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = cli_env / "db.sqlite3"

    async def create() -> None:
        await (await open_store(db)).close()

    asyncio.run(create())
    monkeypatch.setenv("DATABASE_PATH", str(db))
    code, out, err = run_main(capsys, "topics")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("50 catalog topics, each under the topic it belongs to")
    # after the count and the sparkline, the name indented by its depth
    names = [re.fullmatch(r"\s*\d+  \S+  (.*)", line).group(1) for line in lines[1:-1]]  # type: ignore[union-attr]
    rl = names.index("RL Post-Training  [rl-post-training]")
    assert names[rl + 1] == "  Credit Assignment in RL  [credit-assignment]"  # children by name, indented
    assert "    Process Reward Models  [process-reward-models]" in names  # a grandchild
    assert lines[-1] == f"Database: {db}"


RECORDS = [
    {
        "id": "2601.00001",
        "title": "GRPO post-training of LLMs for math",
        "abstract": "We post-train an LLM with GRPO.",
    },
    {
        "id": "2601.00002",
        "title": "On-policy distillation of a small student",
        "abstract": "The student learns from its own samples with a teacher's token-level feedback.",
    },
    {"id": "2601.00003", "title": "Sparse attention kernels", "abstract": "Faster attention on GPUs."},
    {
        "id": "2601.00004",
        "title": "Teaching a model by example",
        "abstract": "A model learns what people prefer.",
    },
]


def labels_folder(folder: Path, rows: list[str]) -> Path:
    import json

    folder.mkdir()
    (folder / "records.jsonl").write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    (folder / "labels.csv").write_text("arxiv_id,topic,label,note\n" + "\n".join(rows) + "\n")
    return folder


def test_relevance_prints_recall_and_precision_then_every_miss_and_false_hit(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = labels_folder(
        cli_env / "labels",
        [
            "2601.00001,RL Post-Training,1,GRPO",
            "2601.00002,RL Post-Training,1,a child's paper: the tree brings it to the parent",
            "2601.00004,RL Post-Training,1,preference learning in words the queries do not know",
            "2601.00003,RL Post-Training,0,",
            "2601.00002,on-policy-distillation,1,",
        ],
    )
    code, out, err = run_main(capsys, "relevance", "--labels", str(folder))
    assert (code, err) == (0, "")
    table, errors = out.split("\n\n")
    assert table.splitlines()[0].split() == [
        "topic",
        "pos",
        "neg",
        "hits",
        "false",
        "hits",
        "recall",
        "precision",
    ]
    assert table.splitlines()[1].split() == ["RL", "Post-Training", "3", "1", "2", "0", "66.7%", "100.0%"]
    assert table.splitlines()[2].split() == ["On-Policy", "Distillation", "1", "0", "1", "0", "100.0%", "n/a"]
    assert errors.splitlines() == [
        "RL Post-Training:",
        "  miss       2601.00004  Teaching a model by example",
    ]

    code, out, _ = run_main(capsys, "relevance", "--labels", str(folder), "--topic", "on-policy distillation")
    assert code == 0 and "RL Post-Training" not in out and "On-Policy Distillation" in out


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        (["2601.00001,RL Post-Training,yes,"], "line 2: label must be 1 (belongs) or 0 (does not)"),
        (["2601.00001,RL Post-Training,1,", "2601.00002,Quantum Okapis,0,"], "line 3: unknown topic"),
        (["2601.00009,RL Post-Training,1,"], "line 2: record '2601.00009' is not in records.jsonl"),
        (["2601.00001,RL Post-Training,1"], "line 2: expected 4 columns"),
    ],
)
def test_bad_labels_name_the_file_and_line_with_the_bad_input_code(
    cli_env: Path, capsys: pytest.CaptureFixture[str], rows: list[str], problem: str
) -> None:
    folder = labels_folder(cli_env / "labels", rows)
    code, out, err = run_main(capsys, "relevance", "--labels", str(folder))
    assert (code, out) == (2, "")
    assert err.startswith(f"paperwatch: {folder / 'labels.csv'}: {problem}")
    assert len(err.splitlines()) == 1


def test_relevance_of_an_unknown_topic_or_folder_says_what_to_do(
    cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = labels_folder(cli_env / "labels", ["2601.00001,RL Post-Training,1,"])
    code, _, err = run_main(capsys, "relevance", "--labels", str(folder), "--topic", "Quantum Okapis")
    assert code == 2 and err == (
        "paperwatch: no catalog topic named 'Quantum Okapis'; `python -m bot topics` lists them\n"
    )
    code, _, err = run_main(capsys, "relevance", "--labels", str(folder), "--topic", "Tool Use")
    assert code == 2 and "no labelled papers for 'Tool Use'" in err
    code, _, err = run_main(capsys, "relevance", "--labels", str(cli_env / "nowhere"))
    assert code == 2 and "nowhere/records.jsonl: cannot read the labels" in err
    code, _, err = run_main(capsys, "relevance", "--half", "C")
    assert code == 2 and "argument --half: invalid choice: 'C'" in err
