"""What only the PostgreSQL store has: its migrations, DATABASE_URL from the command line
(a wrong one: one line, no password), and the translated prefilter that never drops a true match."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from pathlib import Path

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.clock import FakeClock
from bot.config import load_settings
from bot.errors import ConfigError, Unreachable
from bot.models import CATALOG_GUILD, Paper
from bot.sources.arxiv_api import parse_feed
from bot.store import open_store
from bot.store.postgres import PostgresStore
from bot.store.postgres.database import bundled_migrations
from bot.store.postgres.fts_query import to_condition, to_tsquery
from bot.topics.catalog import load_catalog
from bot.topics.index import TopicIndex
from bot.topics.query import QuerySyntaxError, fold_words, parse_query
from tests.cli.process import run_cli
from tests.factories import make_paper
from tests.shared_files import FIXTURES
from tests.store import postgres_cluster as cluster_module
from tests.store.postgres_cluster import Cluster
from tests.topics.strategies import papers, queries

SECRET = "pw-s3cret-xyzzy"


async def test_migrations_are_recorded_and_not_reapplied(postgres_url: str, clock: FakeClock) -> None:
    async with await open_store(postgres_url, clock) as store:
        assert isinstance(store, PostgresStore)
        await store.papers.upsert([make_paper(1)], seen_at=clock.now())
        assert await store.db.migrate() == []
        rows = await store.db.fetchall("SELECT version FROM schema_migrations ORDER BY version")
        assert [r[0] for r in rows] == [v for v, _, _ in bundled_migrations()]
    async with await open_store(postgres_url, clock) as again:
        assert await again.papers.count() == 1


async def test_a_database_of_the_first_schema_gains_the_card_actions_tables_keeping_its_papers(
    postgres_url: str, clock: FakeClock
) -> None:
    """A deployment migrated before card actions (version 1 only) opens with migration 2 applied, data kept."""
    async with await PostgresStore.open(postgres_url, clock) as store:
        await store.papers.upsert([make_paper(1)], seen_at=clock.now())
        async with store.transaction():
            for table in (
                "ratings",
                "saved_papers",
                "topic_history_pending",
                "scorer_models",
                "delivery_leases",
                "topic_day_counts",
            ):
                await store.db.execute(f"DROP TABLE {table}")
            await store.db.execute("DROP FUNCTION forget_topic_day_counts() CASCADE")  # with its trigger
            await store.db.execute(
                "DELETE FROM schema_migrations WHERE version IN (2, 3, 4, 6)"
            )  # what those made
    async with await PostgresStore.open(postgres_url, clock) as upgraded:
        rows = await upgraded.db.fetchall("SELECT version FROM schema_migrations ORDER BY version")
        assert [r[0] for r in rows] == [v for v, _, _ in bundled_migrations()]
        assert await upgraded.db.fetchall("SELECT channel_id FROM delivery_leases") == []
        assert await upgraded.saved.save(7, make_paper(1).arxiv_id, clock.now())
        assert [s.paper.arxiv_id for s in await upgraded.saved.newest(7, limit=5)] == [make_paper(1).arxiv_id]


async def test_processes_starting_at_once_store_the_catalog_one_after_the_other(
    postgres_cluster: Cluster, clock: FakeClock
) -> None:
    """Three processes started together on an empty database each store the catalog at start: without a lock
    they raced on the topics' unique name index (one died with a traceback) or deadlocked on each other's rows.
    Several rounds, each on a new database, since a race shows only sometimes."""
    catalog = load_catalog()
    for _ in range(6):
        url = postgres_cluster.new_database()
        stores = [await PostgresStore.open(url, clock) for _ in range(3)]
        try:
            await asyncio.gather(*(TopicIndex(s, clock).start(catalog, history_later=True) for s in stores))
            rows = await stores[0].topics.own(CATALOG_GUILD)
            assert sorted(row.slug for row in rows) == sorted(topic.slug for topic in catalog)
            queued = await stores[0].topics.history_queue()
            assert sorted(queued) == sorted(row.id for row in rows)  # each new topic's history queued once
        finally:
            for store in stores:
                await store.close()


async def test_a_failed_transaction_leaves_nothing_in_the_index(postgres_url: str, clock: FakeClock) -> None:
    async with await PostgresStore.open(postgres_url, clock) as store:
        try:
            async with store.transaction():
                await store.papers.upsert(
                    [make_paper(1, title="Reinforcement learning")], seen_at=clock.now()
                )
                raise RuntimeError("crash between upsert and commit")
        except RuntimeError:
            pass
        assert await store.db.fetchall("SELECT pk FROM papers WHERE words @@ 'reinforc'::tsquery") == []


async def test_stats_reads_the_postgresql_database_and_never_shows_the_password(
    postgres_cluster: Cluster, postgres_url: str, tmp_path: Path, clock: FakeClock
) -> None:
    async with await open_store(postgres_url, clock) as store:
        await store.papers.upsert([make_paper(1), make_paper(2)], seen_at=clock.now())
    with_password = postgres_url.replace("postgres@", f"postgres:{SECRET}@")  # trust auth ignores it
    code, out, err = await run_cli(
        "stats", env={"DATABASE_URL": with_password, "LOG_LEVEL": "DEBUG"}, cwd=tmp_path
    )
    assert code == 0, err
    assert f"2 papers stored in postgresql://127.0.0.1:{postgres_cluster.port}/" in out
    assert SECRET not in out + err
    assert not (tmp_path / "xdg-data").exists()  # no SQLite file was created on the side


async def test_an_unreachable_server_is_one_line_naming_host_and_database(tmp_path: Path) -> None:
    url = f"postgresql://paperwatch:{SECRET}@127.0.0.1:1/lab_papers"  # nothing listens on port 1
    code, out, err = await run_cli("stats", env={"DATABASE_URL": url, "LOG_LEVEL": "DEBUG"}, cwd=tmp_path)
    assert code != 0 and out == "" and "Traceback" not in err
    [line] = [line for line in err.splitlines() if not line[:4].isdigit()]  # the rest is the DEBUG log
    assert line.startswith("paperwatch: could not open the PostgreSQL database 'lab_papers' on 127.0.0.1:1: ")
    assert "Check DATABASE_URL" in line and SECRET not in err


async def test_a_missing_database_is_named_and_the_password_never_shown(postgres_cluster: Cluster) -> None:
    url = postgres_cluster.url("no_such_db").replace("postgres@", f"postgres:{SECRET}@")
    with pytest.raises(Unreachable) as raised:
        await open_store(url)
    message = str(raised.value)
    assert f"database 'no_such_db' on 127.0.0.1:{postgres_cluster.port}: " in message
    assert "does not exist" in message and "\n" not in message and SECRET not in message


# ---- The prefilter never drops a true match -------------------------------------------------------------


def test_untranslatable_syntax_widens_instead_of_narrowing() -> None:
    assert to_tsquery(None) is None
    assert to_tsquery('title : "x" NOT "y"') is None  # unknown syntax: no condition rather than a wrong one
    assert to_tsquery('("a" AND title : "b")') == "('a' & 'b':A)"
    assert to_tsquery('("a" OR "")') is None  # a branch FTS5 would look for nothing in: unconstrained
    assert to_condition('title : "x" NOT "y"') is None
    assert to_condition('("a" OR (title : "b" AND ""))') == (
        "(p.words @@ ?::tsquery OR ts_filter(p.words, '{a}') @@ ?::tsquery)",
        ["'a'", "'b'"],
    )


async def test_title_only_words_are_looked_up_in_the_index_of_titles(
    postgres_url: str, clock: FakeClock
) -> None:
    """The `words` index keeps no weights: a title-only word there finds every paper holding it anywhere, each
    then re-read to check the weight (seconds at a million papers). The titles have an index of their own."""
    fts = parse_query('(diffusion AND policy) OR ti:"speculative decoding"').to_fts5()
    condition = to_condition(fts)
    assert condition is not None
    sql, params = condition
    # The title's words looked up in the titles' own vector: no weight left to check.
    assert params == ["('diffus' & 'polici')", "('specul' & 'decod')"]
    title = make_paper(1, title="Speculative decoding", abstract="Drafts.")
    elsewhere = make_paper(2, title="Drafts", abstract="Speculative decoding of drafts.")
    async with await PostgresStore.open(postgres_url, clock) as store:
        await store.papers.upsert([title, elsewhere], seen_at=clock.now())
        found = [p.arxiv_id async for batch in store.topics.candidates(fts) for p in batch]
        assert found == [title.arxiv_id]
        async with store.db.transaction() as conn:
            await conn.execute("SET LOCAL enable_seqscan = off")  # a two-paper table: make the planner show
            numbered = sql
            for number in range(1, len(params) + 1):
                numbered = numbered.replace("?", f"${number}", 1)
            plan = await conn.fetchval(
                f"EXPLAIN (FORMAT JSON) SELECT pk FROM papers p WHERE {numbered}", *params
            )
        assert "papers_title_words" in plan and "papers_words" in plan, plan


async def test_every_match_is_a_postgresql_candidate(postgres_url: str, clock: FakeClock) -> None:
    """The topic queries' FTS5 prefilter, translated, keeps every paper the query matches (hypothesis)."""
    store = await PostgresStore.open(postgres_url, clock)
    loop = asyncio.get_running_loop()

    async def check(corpus: list[Paper], texts: list[str]) -> None:
        await store.db.execute("TRUNCATE papers CASCADE")
        await store.papers.upsert(corpus, seen_at=clock.now())
        for text in texts:
            try:
                query = parse_query(text)
            except QuerySyntaxError:
                continue
            found = {
                p.arxiv_id
                for batch in [b async for b in store.topics.candidates(query.to_fts5())]
                for p in batch
            }
            missed = {p.arxiv_id for p in corpus if query.matches(p)} - found
            assert not missed, (
                f"{text!r} -> {query.to_fts5()!r} -> {to_tsquery(query.to_fts5())!r} dropped {missed}"
            )

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(papers, min_size=1, max_size=8), st.lists(queries, min_size=1, max_size=6))
    def property(corpus: list[Paper], texts: list[str]) -> None:
        numbered = [replace(p, arxiv_id=f"2601.{i:05d}") for i, p in enumerate(corpus)]
        asyncio.run_coroutine_threadsafe(check(numbered, texts), loop).result()

    try:
        await asyncio.to_thread(property)
    finally:
        await store.close()


def test_without_postgresql_the_tests_say_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(cluster_module, "SERVER_DIRS", [])
    with pytest.raises(cluster_module.PostgresMissing, match=r"apt-get install postgresql"):
        cluster_module.start_cluster()


async def test_real_arxiv_papers_keep_every_match(postgres_url: str, clock: FakeClock) -> None:
    """Real titles, abstracts and author names (LaTeX, accents, hyphens, numbers, URLs) from recorded arXiv
    answers: every paper a random query of their own words matches is a PostgreSQL candidate."""
    corpus = [
        *parse_feed((FIXTURES / "api_query_testing_100.xml").read_bytes()).papers,
        *parse_feed((FIXTURES / "api_query_legacy_10.xml").read_bytes()).papers,
    ]
    rng = random.Random(20261130)
    vocabulary = sorted({w for p in corpus for w in fold_words(f"{p.title} {p.abstract}")})
    names = sorted({w for p in corpus for a in p.authors for w in fold_words(a.name)})

    def term() -> str:
        word, kind = rng.choice(vocabulary), rng.random()
        if kind < 0.3:
            return word[: rng.randint(1, len(word))] + "*"
        if kind < 0.5:
            return '"' + " ".join(rng.choice(vocabulary) for _ in range(2)) + '"'
        if kind < 0.6:
            return "au:" + rng.choice(names)
        return rng.choice(("", "ti:", "abs:")) + word

    async with await PostgresStore.open(postgres_url, clock) as store:
        await store.papers.upsert(corpus, seen_at=clock.now())
        checked = 0
        for _ in range(150):
            text = term()
            for _ in range(rng.randint(0, 2)):
                text = f"({text} {rng.choice(('AND', 'OR', 'ANDNOT'))} {term()})"
            try:
                query = parse_query(text)
            except QuerySyntaxError:
                continue
            matching = {p.arxiv_id for p in corpus if query.matches(p)}
            found = {p.arxiv_id async for batch in store.topics.candidates(query.to_fts5()) for p in batch}
            assert matching <= found, (
                f"{text!r} -> {to_tsquery(query.to_fts5())!r} dropped {matching - found}"
            )
            checked += bool(matching)
        assert checked > 50  # most queries match something: the check is not vacuous


def test_database_url_chooses_the_store_and_is_shown_without_its_password(tmp_path: Path) -> None:
    sqlite = load_settings(_env_file=None, database_path=tmp_path / "papers.sqlite3")
    assert sqlite.database == tmp_path / "papers.sqlite3" and sqlite.database_url is None
    url = f"postgresql://lab:{SECRET}@db.lab.org:5433/papers"
    postgres = load_settings(_env_file=None, database_url=url)
    assert postgres.database == url
    assert postgres.database_shown == "postgresql://db.lab.org:5433/papers"
    assert SECRET not in repr(postgres)


async def test_words_postgresql_would_parse_as_numbers_are_still_found(
    postgres_url: str, clock: FakeClock
) -> None:
    # PostgreSQL's parser reads "91e607f" as the number 91e607 and the word f: such words are stored encoded.
    paper = make_paper(1, title="Beams at 3e8m and hash 91e607f", abstract="Rates of 1e5 per 2024 run.")
    async with await PostgresStore.open(postgres_url, clock) as store:
        await store.papers.upsert([paper], seen_at=clock.now())
        for text in ("ti:3e8m", "ti:91e607f", "ti:91e6*", "abs:1e5", "abs:2024", "ti:hash", "ti:9*"):
            query = parse_query(text)
            assert query.matches(paper), text
            found = [p.arxiv_id async for batch in store.topics.candidates(query.to_fts5()) for p in batch]
            assert found == [paper.arxiv_id], f"{text!r} -> {to_tsquery(query.to_fts5())!r}"


_WORD = st.one_of(
    st.from_regex(r"[0-9]{1,3}e[0-9]{1,3}[a-f]{0,2}", fullmatch=True),  # what reads like a number
    st.text(alphabet="abcdexyz0123456789éßø", min_size=1, max_size=8),
)


async def test_any_word_is_found_by_itself_and_its_prefixes(postgres_url: str, clock: FakeClock) -> None:
    """Words of any letters and digits, in any order (what the parser could read as numbers, hosts, versions
    or a locale could fold): each one and each of its prefixes finds its paper (hypothesis)."""
    store = await PostgresStore.open(postgres_url, clock)
    loop = asyncio.get_running_loop()

    async def check(words: list[str]) -> None:
        await store.db.execute("TRUNCATE papers CASCADE")
        paper = make_paper(1, title=" ".join(words[:4]), abstract=" ".join(words))
        await store.papers.upsert([paper], seen_at=clock.now())
        for word in words:
            for text in (
                f"ti:{word}" if word in words[:4] else f"abs:{word}",
                f"{word[: len(word) // 2 + 1]}*",
            ):
                try:
                    query = parse_query(text)
                except QuerySyntaxError:
                    continue
                if not query.matches(paper):
                    continue
                found = [
                    p.arxiv_id async for batch in store.topics.candidates(query.to_fts5()) for p in batch
                ]
                assert found == [paper.arxiv_id], f"{text!r} -> {to_tsquery(query.to_fts5())!r}"

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(_WORD, min_size=1, max_size=10))
    def property(words: list[str]) -> None:
        asyncio.run_coroutine_threadsafe(check(words), loop).result()

    try:
        await asyncio.to_thread(property)
    finally:
        await store.close()


@pytest.mark.parametrize(  # the command line turns a settings error into one line and exit code 2
    "url", [f"postgresql://u:{SECRET}@db:port/x", f"postgresql://u:{SECRET}@[::1/x", f"sqlite:///{SECRET}"]
)
def test_an_unreadable_database_url_is_a_settings_error_without_the_secret(url: str) -> None:
    with pytest.raises(ConfigError, match="DATABASE_URL: expected a PostgreSQL address") as raised:
        load_settings(_env_file=None, database_url=url)
    assert SECRET not in str(raised.value)


async def test_a_user_who_may_not_create_tables_is_told_so(postgres_url: str, clock: FakeClock) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    reader = f"reader_{database}"  # roles belong to the whole cluster
    async with await PostgresStore.open(postgres_url, clock) as store:
        await store.db.execute(f"CREATE ROLE {reader} LOGIN")
        await store.db.execute("DROP TABLE schema_migrations")  # as if the store had never been opened
    with pytest.raises(Unreachable) as raised:
        await open_store(postgres_url.replace("postgres@", f"{reader}:{SECRET}@"), clock)
    message = str(raised.value)
    assert message.startswith(f"could not create paperwatch's tables in the PostgreSQL database '{database}'")
    assert "permission denied" in message and SECRET not in message


async def test_a_transaction_whose_session_is_ended_mid_statement_is_one_line_not_a_traceback(
    postgres_url: str, clock: FakeClock
) -> None:
    """PostgreSQL restarting under a write transaction: its statement fails (the server ended the session), then
    the transaction's rollback fails too, on the closed connection (asyncpg's InterfaceError), and that error took
    the first's place: a traceback in the deliver job's log instead of the one line a lost server gives."""
    async with await PostgresStore.open(postgres_url, clock) as store:
        other = await asyncpg.connect(postgres_url)
        try:

            async def in_transaction() -> None:
                async with store.db.transaction() as conn:
                    await conn.execute("SELECT pg_sleep(30)")

            sleeping = asyncio.ensure_future(in_transaction())
            for _ in range(500):  # until the statement runs (at once when it works)
                ended = await other.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'"
                )
                if ended:
                    break
                await asyncio.sleep(0.01)
            with pytest.raises(Unreachable, match="lost the connection to the PostgreSQL"):
                await sleeping
        finally:
            await other.close()
        assert await store.db.fetchone("SELECT 1") is not None  # the next statement runs on a new connection
