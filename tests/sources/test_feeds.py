"""arXiv RSS and generic RSS/Atom feeds: parsing the recorded quant-ph feed, and conditional fetches."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.clock import FakeClock
from bot.errors import ArxivUnavailable, MalformedFeed, SourceError
from bot.loopback.arxiv import LoopbackArxiv, RecordedRequest
from bot.models import Author
from bot.sources.feeds import (
    FeedItem,
    FeedReader,
    FeedResult,
    html_to_text,
    parse_arxiv_feed,
    parse_generic_feed,
    rss_url,
    split_authors,
)
from bot.sources.polite_http import PoliteHttp, build_http_client
from tests.shared_files import FIXTURES

FIXTURE = FIXTURES / "rss_quant-ph_2025-04-28.xml"
ANNOUNCED = datetime(2025, 4, 28, 4, 0, tzinfo=UTC)  # pubDate Mon, 28 Apr 2025 00:00:00 -0400


@pytest.fixture(scope="module")
def rss_bytes() -> bytes:
    return FIXTURE.read_bytes()


@pytest.fixture(scope="module")
def items(rss_bytes: bytes) -> dict[str, FeedItem]:
    parsed = parse_arxiv_feed(rss_bytes)
    assert len(parsed) == 81
    return {item.paper.arxiv_id: item for item in parsed}


def arxiv_rss(*items: str, channel_extra: str = "") -> bytes:
    """A minimal arXiv-style RSS document around the given <item> bodies."""
    body = "".join(f"<item>{item}</item>" for item in items)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<rss xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:dc="http://purl.org/dc/elements/1.1/" '
        f'version="2.0"><channel><title>t</title>{channel_extra}{body}</channel></rss>'
    ).encode()


# --------------------------------------------------------------------------------------- the recorded feed


def test_fixture_counts_by_announce_type(rss_bytes: bytes) -> None:
    parsed = parse_arxiv_feed(rss_bytes)
    assert len(parsed) == 81
    assert Counter(i.announce_type for i in parsed) == {
        "new": 40,
        "cross": 10,
        "replace": 22,
        "replace-cross": 9,
    }
    assert sum(i.is_new_paper for i in parsed) == 50
    assert len({i.paper.arxiv_id for i in parsed}) == 81


def test_first_item_field_by_field(rss_bytes: bytes) -> None:
    item = parse_arxiv_feed(rss_bytes)[0]
    paper = item.paper
    assert (paper.arxiv_id, paper.version) == ("2504.17830", 1)
    assert paper.title == "Self-Adjoint Time Operator in a Weighted Energy Space"
    assert paper.abstract.startswith("We introduce a self-adjoint time operator \\(T_w = i\\hbar")
    assert paper.abstract.endswith("which in turn leaves the Hamiltonian spectrum unbounded.")
    assert "Announce Type" not in paper.abstract
    assert paper.authors == (Author("Radmir Kokoulin"),)
    assert (paper.primary_category, paper.categories) == ("quant-ph", ("quant-ph",))
    assert paper.published == paper.updated == ANNOUNCED
    assert (paper.doi, paper.journal_ref, paper.comment) == (None, None, None)
    assert item.announce_type == "new" and item.is_new_paper


def test_item_with_several_authors_and_categories(items: dict[str, FeedItem]) -> None:
    paper = items["2504.17837"].paper
    assert paper.title == (
        "Statistical noise enhances quantumness benefits in spin-network quantum reservoir computing"
    )
    assert [a.name for a in paper.authors] == ["Youssef Kora", "Christoph Simon"]
    assert all(a.affiliations == () for a in paper.authors)
    assert paper.categories == ("quant-ph", "physics.comp-ph")


def test_authors_with_parenthesised_affiliations_stay_four_people(items: dict[str, FeedItem]) -> None:
    # dc:creator holds affiliations with commas and "and" inside parentheses
    nirmal = next(i for i in items.values() if i.paper.authors[0].name == "M. R. Nirmal")
    assert [a.name for a in nirmal.paper.authors] == [
        "M. R. Nirmal",
        "Ankit Khandelwal",
        "Manoj Nambiar",
        "Sharma S. R. K. C. Yamijala",
    ]


def test_replace_item_keeps_its_later_version(items: dict[str, FeedItem]) -> None:
    item = items["2112.14988"]
    assert item.announce_type == "replace" and not item.is_new_paper
    assert item.paper.version == 4
    assert item.paper.versioned_id == "2112.14988v4"
    assert item.paper.title == "Deniable Encryption in a Quantum World"
    assert item.paper.abstract.startswith("(Sender-)Deniable encryption provides a very strong privacy")
    assert [a.name for a in item.paper.authors] == [
        "Andrea Coladangelo",
        "Shafi Goldwasser",
        "Umesh Vazirani",
    ]
    assert item.paper.categories == ("quant-ph", "cs.CR")


def test_doi_and_journal_reference(items: dict[str, FeedItem]) -> None:
    paper = items["2412.08305"].paper
    assert paper.doi == "10.1103/PhysRevA.111.043716"
    assert paper.doi_url == "https://doi.org/10.1103/PhysRevA.111.043716"
    assert paper.journal_ref == "Phys. Rev. A111, 043716(2025)"
    assert paper.version == 2
    only_ref = items["2504.18166"].paper
    assert (only_ref.doi, only_ref.journal_ref) == (None, "Phys. Rev. A 111, 042427 (2025)")


def test_cross_list_takes_its_first_category_as_primary(items: dict[str, FeedItem]) -> None:
    item = items["2504.16299"]
    assert item.announce_type == "cross" and item.is_new_paper
    assert item.paper.primary_category == "cs.IT"
    assert item.paper.categories == ("cs.IT", "math.IT", "quant-ph")
    assert items["2401.00867"].announce_type == "replace-cross"
    assert items["2401.00867"].paper.primary_category == "cs.LG"


def test_cut_off_fixture_is_malformed_even_with_entries(rss_bytes: bytes) -> None:
    # feedparser reads 40 items from the first half; taking them would silently lose the other 41 papers
    with pytest.raises(MalformedFeed, match="cut off"):
        parse_arxiv_feed(rss_bytes[: len(rss_bytes) // 2])


def test_malformed_but_complete_feed_is_tolerated_and_decoded() -> None:
    doc = arxiv_rss(
        "<title>Q &amp; A&nbsp;x</title>"
        "<description>arXiv:2504.00001v1 Announce Type: new \n"
        "Abstract: Tom & Jerry see &lt;psi|phi&gt; &amp;amp; more.</description>"  # a bare "&": not XML
        "<guid>oai:arXiv.org:2504.00001v1</guid><category>cs.LG</category>"
        "<pubDate>Tue, 29 Apr 2025 00:00:00 -0400</pubDate><dc:creator>A B</dc:creator>"
    )
    (item,) = parse_arxiv_feed(doc)
    assert item.paper.title == "Q & A x"  # the no-break space is normalised like any whitespace
    assert item.paper.abstract == "Tom & Jerry see <psi|phi> &amp; more."


# ------------------------------------------------------------------------------------ arXiv item edge cases


def test_bra_ket_and_entities_survive_as_plain_text() -> None:
    doc = arxiv_rss(
        "<title>Overlaps &lt;psi|phi&gt; of |0&gt; states</title>"
        "<description>arXiv:2504.00001v2 Announce Type: replace \n"
        "Abstract: The overlap &lt;psi|phi&gt; with a&lt;b, c&gt;d and &lt;i&gt;x&lt;/i&gt; &amp;amp;\n"
        "  end.</description>"
        "<guid>oai:arXiv.org:2504.00001v2</guid><category>quant-ph</category>"
        "<pubDate>Tue, 29 Apr 2025 00:00:00 -0400</pubDate>"
        "<arxiv:announce_type>replace</arxiv:announce_type><dc:creator>A B</dc:creator>"
    )
    (item,) = parse_arxiv_feed(doc)
    assert item.paper.title == "Overlaps <psi|phi> of |0> states"
    assert item.paper.abstract == "The overlap <psi|phi> with a<b, c>d and <i>x</i> &amp; end."
    assert item.paper.published == datetime(2025, 4, 29, 4, 0, tzinfo=UTC)


def test_id_from_description_when_guid_is_missing_and_type_from_description() -> None:
    doc = arxiv_rss(
        "<title>T</title><link>https://arxiv.org/abs/2504.00002</link>"
        "<description>arXiv:2504.00002v3 Announce Type: replace-cross \nAbstract: Text.</description>"
        "<category>hep-th</category><category>quant-ph</category><dc:creator>X Y and Z W</dc:creator>"
    )
    (item,) = parse_arxiv_feed(doc, announced=ANNOUNCED)
    assert item.paper.versioned_id == "2504.00002v3"
    assert item.announce_type == "replace-cross"
    assert item.paper.published == ANNOUNCED  # no pubDate anywhere: the caller's date
    assert [a.name for a in item.paper.authors] == ["X Y", "Z W"]


def test_old_style_ids_unknown_types_and_channel_date_fallback() -> None:
    doc = arxiv_rss(
        "<title>Old</title><description>arXiv:math/0309136v2 Announce Type: weird \nAbstract: A.</description>"
        "<guid>oai:arXiv.org:math/0309136v2</guid><category>math.GT</category>"
        "<arxiv:announce_type>weird</arxiv:announce_type><dc:creator>G P</dc:creator>",
        channel_extra="<lastBuildDate>Tue, 29 Apr 2025 04:00:00 +0000</lastBuildDate>",
    )
    (item,) = parse_arxiv_feed(doc)
    assert (item.paper.arxiv_id, item.paper.version) == ("math/0309136", 2)
    assert item.announce_type == "unknown" and not item.is_new_paper
    assert item.paper.published == datetime(2025, 4, 29, 4, 0, tzinfo=UTC)


def test_explicit_primary_category_wins_and_first_doi_is_kept() -> None:
    doc = arxiv_rss(
        "<title>P</title><description>arXiv:2504.00003v1 Announce Type: cross \nAbstract: A.</description>"
        "<guid>oai:arXiv.org:2504.00003v1</guid><category>quant-ph</category><category>cs.LG</category>"
        '<arxiv:primary_category term="cs.LG"/><arxiv:DOI>10.1/a 10.2/b</arxiv:DOI>'
        "<pubDate>Mon, 28 Apr 2025 00:00:00 -0400</pubDate><dc:creator>A B</dc:creator>"
    )
    (item,) = parse_arxiv_feed(doc)
    assert item.paper.primary_category == "cs.LG"
    assert item.paper.categories == ("cs.LG", "quant-ph")
    assert item.paper.doi == "10.1/a"


def test_an_item_without_id_is_skipped_not_fatal() -> None:
    good = (
        "<title>G</title><description>arXiv:2504.00004v1 Announce Type: new \nAbstract: A.</description>"
        "<category>cs.LG</category><pubDate>Mon, 28 Apr 2025 00:00:00 -0400</pubDate>"
    )
    bad = "<title>No id</title><description>Nothing here</description><category>cs.LG</category>"
    assert [i.paper.arxiv_id for i in parse_arxiv_feed(arxiv_rss(bad, good))] == ["2504.00004"]


def test_empty_feed_is_empty_not_an_error() -> None:
    assert parse_arxiv_feed(arxiv_rss()) == []


@pytest.mark.parametrize(
    "body",
    [b"", b"<rss version='2.0'><channel><title>cut", b"<html><body>Service unavailable</body></html>"],
    ids=["empty", "truncated", "html-page"],
)
def test_unreadable_bodies_raise_malformed_feed(body: bytes) -> None:
    with pytest.raises(MalformedFeed):
        parse_arxiv_feed(body)
    with pytest.raises(MalformedFeed):
        parse_generic_feed(body)


def test_body_naming_a_local_file_is_not_read_as_one(tmp_path: Path) -> None:
    local = tmp_path / "feed.xml"
    local.write_bytes(arxiv_rss("<title>Local</title><guid>oai:arXiv.org:2504.00005v1</guid>"))
    with pytest.raises(MalformedFeed):
        parse_arxiv_feed(str(local).encode())


# ------------------------------------------------------------------------------------------ author strings


@pytest.mark.parametrize(
    ("creator", "names"),
    [
        ("Ada Lovelace", ["Ada Lovelace"]),
        ("A One, B Two, and C Three", ["A One", "B Two", "C Three"]),
        ("A One and B Two", ["A One", "B Two"]),
        ("John Smith, Jr., Jane Roe", ["John Smith Jr.", "Jane Roe"]),
        ("Sandy Anderson, Andy Band", ["Sandy Anderson", "Andy Band"]),
        ("P Q (Dept. A, Uni B and C), R S (X [Y, Z])", ["P Q", "R S"]),
        ("  Spread \n  Over ,  Lines  ", ["Spread Over", "Lines"]),
        ("ATLAS Collaboration", ["ATLAS Collaboration"]),
        ("", []),
    ],
)
def test_split_authors(creator: str, names: list[str]) -> None:
    assert split_authors(creator) == names


# Words that are never separators ("and") or suffixes ("Jr."), which would make a name ambiguous by design.
_word = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll")), min_size=1, max_size=8).filter(
    lambda w: w not in {"and", "Jr", "Sr", "II", "III", "IV"}
)
_person = st.tuples(
    st.lists(_word, min_size=1, max_size=3).map(" ".join),
    st.one_of(st.none(), st.lists(_word, max_size=4)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_person, min_size=1, max_size=6))
def test_split_authors_recovers_any_comma_joined_list(people: list[tuple[str, list[str] | None]]) -> None:
    """Whatever the affiliations hold (commas, "and"), joining names with ", " and splitting gives them back."""
    pieces = [name if aff is None else f"{name} ({', '.join(aff)} and more)" for name, aff in people]
    assert split_authors(", ".join(pieces)) == [name for name, _ in people]


# ----------------------------------------------------------------------------------------- generic feeds

JOURNAL_ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Journal of Examples: latest articles</title>
  <id>urn:example:journal</id>
  <updated>2026-11-20T08:00:00Z</updated>
  <entry>
    <id>https://doi.org/10.5555/joe.2026.001</id>
    <title type="html">Fast &lt;i&gt;in situ&lt;/i&gt; learning</title>
    <link rel="alternate" href="https://journal.example/articles/001"/>
    <author><name>Grace Hopper</name></author>
    <author><name>Edsger Dijkstra</name></author>
    <published>2026-11-19T10:30:00+01:00</published>
    <summary type="html">&lt;p&gt;We show &lt;b&gt;fast&lt;/b&gt; results.&lt;/p&gt;&lt;p&gt;Second
      paragraph.&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;</summary>
  </entry>
  <entry>
    <id>https://doi.org/10.5555/joe.2026.002</id>
    <title>Plain title with a &lt; sign</title>
    <link href="https://journal.example/articles/002"/>
    <updated>2026-11-18T00:00:00Z</updated>
    <content type="html">&lt;div&gt;Only content here.&lt;/div&gt;</content>
  </entry>
</feed>"""

BLOG_RSS = b"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>Lab blog</title>
  <item>
    <title>Our new paper</title>
    <link>https://blog.example/posts/new-paper</link>
    <description>Read &lt;a href="/x"&gt;the paper&lt;/a&gt;.</description>
    <dc:creator>Lab Team</dc:creator>
    <pubDate>Wed, 18 Nov 2026 15:00:00 GMT</pubDate>
  </item>
  <item><title>Undated note</title><link>https://blog.example/posts/note</link></item>
</channel></rss>"""


def test_generic_atom_journal_feed() -> None:
    first, second = parse_generic_feed(JOURNAL_ATOM)
    assert first.id == "https://doi.org/10.5555/joe.2026.001"
    assert first.title == "Fast in situ learning"
    assert first.link == "https://journal.example/articles/001"
    assert first.summary == "We show fast results. Second paragraph."
    assert first.authors == ("Grace Hopper", "Edsger Dijkstra")
    assert first.published == datetime(2026, 11, 19, 9, 30, tzinfo=UTC)
    assert second.title == "Plain title with a < sign"
    assert second.summary == "Only content here."
    assert second.authors == ()
    assert second.published == datetime(2026, 11, 18, tzinfo=UTC)  # <updated> when not published


def test_generic_rss_blog_feed() -> None:
    post, note = parse_generic_feed(BLOG_RSS)
    assert post.id == "https://blog.example/posts/new-paper"  # no guid: the link identifies it
    assert post.summary == "Read the paper ."
    assert post.authors == ("Lab Team",)
    assert post.published == datetime(2026, 11, 18, 15, 0, tzinfo=UTC)
    assert (note.title, note.summary, note.published) == ("Undated note", "", None)


def test_html_to_text() -> None:
    assert html_to_text("<p>a</p><p>b &amp; c</p><style>p{}</style>") == "a b & c"


def test_rss_url_joins_categories() -> None:
    assert (
        rss_url("https://rss.arxiv.org/rss", ["cs.LG", "stat.ML"])
        == "https://rss.arxiv.org/rss/cs.LG+stat.ML"
    )
    assert rss_url("https://rss.arxiv.org/rss/", ["cs.AI"]) == "https://rss.arxiv.org/rss/cs.AI"
    with pytest.raises(ValueError):
        rss_url("https://rss.arxiv.org/rss", [])


# ------------------------------------------------------------------------- fetching over 127.0.0.1 HTTP

LAST_MODIFIED = datetime(2025, 4, 28, 4, 0, tzinfo=UTC)
LAST_MODIFIED_HEADER = "Mon, 28 Apr 2025 04:00:00 GMT"
ONE_ITEM = arxiv_rss(
    "<title>One</title><description>arXiv:2504.00009v1 Announce Type: new \nAbstract: A.</description>"
    "<guid>oai:arXiv.org:2504.00009v1</guid><category>cs.LG</category>"
    "<pubDate>Tue, 29 Apr 2025 00:00:00 -0400</pubDate><arxiv:announce_type>new</arxiv:announce_type>"
    "<dc:creator>Solo Author</dc:creator>"
)


@pytest.fixture
async def http(clock: FakeClock) -> AsyncIterator[PoliteHttp]:
    client = build_http_client("paperwatch-tests/0.1 (mailto:tests@example.org)", timeout=10.0)
    try:
        yield PoliteHttp(client, clock, max_tries=3)
    finally:
        await client.aclose()


@pytest.fixture
async def fake() -> AsyncIterator[LoopbackArxiv]:
    async with LoopbackArxiv() as fa:
        yield fa


def sent(request: RecordedRequest, name: str) -> str | None:
    return {k.lower(): v for k, v in request.headers.items()}.get(name.lower())


async def test_fetch_then_304_with_both_validators(
    fake: LoopbackArxiv, http: PoliteHttp, rss_bytes: bytes
) -> None:
    fake.set_rss(rss_bytes, cats="quant-ph", etag='"day-1"', last_modified=LAST_MODIFIED)
    reader = FeedReader(http)
    url = rss_url(fake.rss_url, ["quant-ph"])

    first = await reader.fetch_arxiv(url)
    assert not first.not_modified
    assert len(first.items) == 81 and first.items[0].paper.arxiv_id == "2504.17830"
    assert (first.etag, first.last_modified) == ('"day-1"', LAST_MODIFIED_HEADER)
    assert first.build_date == datetime(2025, 4, 28, 4, 0, tzinfo=UTC)  # channel lastBuildDate

    again = await reader.fetch_arxiv(url, etag=first.etag, last_modified=first.last_modified)
    assert again.not_modified and again.items == []
    assert (again.etag, again.last_modified, again.build_date) == ('"day-1"', LAST_MODIFIED_HEADER, None)

    plain, conditional = await fake.wait_for_requests(2, endpoint="rss")
    assert sent(plain, "If-None-Match") is None and sent(plain, "If-Modified-Since") is None
    assert sent(conditional, "If-None-Match") == '"day-1"'
    assert sent(conditional, "If-Modified-Since") == LAST_MODIFIED_HEADER
    assert "mailto:tests@example.org" in (sent(conditional, "User-Agent") or "")
    assert conditional.path == "/rss/quant-ph"


async def test_if_modified_since_alone_gets_a_304(fake: LoopbackArxiv, http: PoliteHttp) -> None:
    fake.set_rss(ONE_ITEM, etag='"server-tag"', last_modified=LAST_MODIFIED)
    result = await FeedReader(http).fetch_arxiv(
        rss_url(fake.rss_url, ["cs.LG"]), last_modified=LAST_MODIFIED_HEADER
    )
    assert result.not_modified and result.items == []
    assert result.last_modified == LAST_MODIFIED_HEADER
    assert result.etag == '"server-tag"'  # the 304 names the current ETag: keep it for next time


async def test_a_new_batch_replaces_stale_validators(fake: LoopbackArxiv, http: PoliteHttp) -> None:
    fake.set_rss(ONE_ITEM, etag='"day-2"')  # no Last-Modified this time
    result = await FeedReader(http).fetch_arxiv(
        rss_url(fake.rss_url, ["cs.LG", "stat.ML"]), etag='"day-1"', last_modified=LAST_MODIFIED_HEADER
    )
    assert not result.not_modified
    assert [i.paper.versioned_id for i in result.items] == ["2504.00009v1"]
    assert (result.etag, result.last_modified) == ('"day-2"', None)
    (request,) = await fake.wait_for_requests(1, endpoint="rss")
    assert request.path == "/rss/cs.LG+stat.ML"


async def test_cut_off_body_is_retried(
    fake: LoopbackArxiv, http: PoliteHttp, clock: FakeClock, rss_bytes: bytes
) -> None:
    fake.set_rss(rss_bytes)
    fake.truncate_next(endpoint="rss")  # a complete HTTP answer holding half the feed (40 readable items)
    result = await FeedReader(http).fetch_arxiv(rss_url(fake.rss_url, ["quant-ph"]))
    assert len(result.items) == 81
    assert len(await fake.wait_for_requests(2, endpoint="rss")) == 2
    assert clock.sleeps and clock.sleeps[0] >= http.min_interval  # a backoff wait, on the fake clock


async def test_html_error_page_every_time_gives_up_as_unavailable(
    fake: LoopbackArxiv, http: PoliteHttp
) -> None:
    fake.serve_raw_next(b"<html><body>Down for maintenance</body></html>", count=3, endpoint="rss")
    with pytest.raises(ArxivUnavailable, match="3 tries"):
        await FeedReader(http).fetch_arxiv(rss_url(fake.rss_url, ["cs.LG"]))
    assert fake.pending_faults("rss") == 0


async def test_unknown_feed_is_a_source_error_without_retries(fake: LoopbackArxiv, http: PoliteHttp) -> None:
    with pytest.raises(SourceError, match="HTTP 404") as caught:
        await FeedReader(http).fetch_arxiv(rss_url(fake.rss_url, ["no.such"]))
    assert not isinstance(caught.value, ArxivUnavailable)
    assert len(fake.requests) == 1


async def test_server_error_then_success(fake: LoopbackArxiv, http: PoliteHttp, clock: FakeClock) -> None:
    fake.set_rss(ONE_ITEM)
    fake.fail_next(503, retry_after="7", endpoint="rss")
    result = await FeedReader(http).fetch_arxiv(rss_url(fake.rss_url, ["cs.LG"]))
    assert len(result.items) == 1
    assert 7.0 in clock.sleeps  # Retry-After honoured


async def test_fetch_generic_feed_with_conditional_get(fake: LoopbackArxiv, http: PoliteHttp) -> None:
    fake.set_rss(JOURNAL_ATOM, cats="journal", etag='"j1"', last_modified=LAST_MODIFIED)
    reader = FeedReader(http)
    url = f"{fake.rss_url}/journal"
    entries, not_modified, etag, last_modified = await reader.fetch_generic(url)
    assert not not_modified
    assert [e.title for e in entries] == ["Fast in situ learning", "Plain title with a < sign"]
    assert (etag, last_modified) == ('"j1"', LAST_MODIFIED_HEADER)
    assert await reader.fetch_generic(url, etag=etag, last_modified=last_modified) == (
        [],
        True,
        '"j1"',
        LAST_MODIFIED_HEADER,
    )


async def test_a_bare_304_keeps_the_validators_sent(clock: FakeClock) -> None:
    # LoopbackArxiv repeats its validators on a 304; a server may not, and then the old ones still hold.
    def bare_304(request: httpx.Request) -> httpx.Response:
        assert request.headers["If-None-Match"] == '"old"'
        return httpx.Response(304)

    async with httpx.AsyncClient(transport=httpx.MockTransport(bare_304)) as client:
        result = await FeedReader(PoliteHttp(client, clock)).fetch_arxiv(
            "http://127.0.0.1/rss/cs.LG", etag='"old"', last_modified=LAST_MODIFIED_HEADER
        )
    assert result == FeedResult([], True, '"old"', LAST_MODIFIED_HEADER, None)
