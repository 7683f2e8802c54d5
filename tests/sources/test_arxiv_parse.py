"""parse_feed against arXiv's real recorded pages (both backends), hostile documents and a round trip.

Expected values below were read by hand from the fixture files, not produced by the parser.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from bot.errors import ArxivQueryError, MalformedFeed
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.atom import RawEntry, atom_feed, error_feed
from bot.models import Author, Paper
from bot.sources import limits
from bot.sources.arxiv_api import ATOM_NS, UnsafeFeed, _make_parser, parse_feed
from tests.factories import make_paper
from tests.fakes.hostile import HOSTILE_ENTRIES, HOSTILE_ID, hostile_entry
from tests.shared_files import FIXTURES


@cache
def _raw(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@cache
def _papers(name: str) -> dict[str, Paper]:
    return {p.arxiv_id: p for p in parse_feed(_raw(name)).papers}


def current(arxiv_id: str) -> Paper:
    return _papers("api_query_testing_100.xml")[arxiv_id]


def legacy(arxiv_id: str) -> Paper:
    return _papers("api_query_legacy_10.xml")[arxiv_id]


def utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


# -- feed-level counts ----------------------------------------------------------------------------------


def test_current_backend_counts_and_title() -> None:
    page = parse_feed(_raw("api_query_testing_100.xml"), query="testing")
    assert (page.total_results, page.start_index, page.items_per_page) == (214881, 0, 100)
    assert len(page.papers) == 100
    assert page.query_title == "arXiv Query: search_query=all:testing&id_list=&start=0&max_results=100"
    assert page.papers[0].arxiv_id == "2202.12139"
    assert page.papers[-1].doi == "10.1007/3-540-40988-2_10"


def test_legacy_backend_counts_with_per_element_namespaces() -> None:
    page = parse_feed(_raw("api_query_legacy_10.xml"))
    assert (page.total_results, page.start_index, page.items_per_page) == (7370, 0, 10)
    assert [p.arxiv_id for p in page.papers][:3] == ["astro-ph/9904306", "hep-ph/9411242", "1706.01836"]
    assert len(page.papers) == 10
    assert page.query_title.startswith("ArXiv Query: search_query=all:electron AND all:proton")


# -- current backend, field by field --------------------------------------------------------------------


def test_entry_with_doi_comment_and_journal_ref() -> None:
    paper = current("2202.12139")
    assert paper.version == 1
    assert (
        paper.title
        == "Testing Deep Learning Models: A First Comparative Study of Multiple Testing Techniques"
    )
    assert paper.abstract.startswith("Deep Learning (DL) has revolutionized the capabilities of vision-based")
    assert paper.abstract.endswith("discuss its results.")
    assert paper.authors == (
        Author("Mohit Kumar Ahuja"),
        Author("Arnaud Gotlieb"),
        Author("Helge Spieker"),
    )
    assert paper.primary_category == "cs.SE"
    assert paper.categories == ("cs.SE", "cs.LG")
    assert paper.published == utc("2022-02-24T15:05:19Z")
    assert paper.updated == utc("2022-02-24T15:05:19Z")
    assert paper.comment == "Artificial Intelligence in Software Testing 2022 workshop @ ICST 2022"
    assert paper.journal_ref == (
        "Artificial Intelligence in Software Testing @ 2022 IEEE International Conference on Software "
        "Testing, Verification and Validation Workshops (ICSTW)"
    )
    assert paper.doi == "10.1109/ICSTW55395.2022.00035"


def test_entry_with_two_affiliations_each_kept_per_author() -> None:
    paper = current("0804.0970")
    assert paper.authors == (
        Author("Marie-Claude Gaudel", ("LRI",)),
        Author("Pascale Le Gall", ("IBISC",)),
    )
    assert paper.categories == ("cs.PL",)
    assert paper.journal_ref == "Formal Methods and Testing, Springer-Verlag (Ed.) (2008) 209-239"
    assert paper.comment is None
    assert paper.doi is None
    # The summary starts with two spaces on this entry: stripped.
    assert paper.abstract.startswith("Algebraic specifications of data types provide a natural basis")


def test_version_above_one_keeps_both_dates() -> None:
    paper = current("2409.05654")
    assert paper.version == 9
    assert paper.versioned_id == "2409.05654v9"
    assert paper.published == utc("2024-09-09T14:21:19Z")
    assert paper.updated == utc("2025-05-08T20:52:40Z")
    assert paper.published.tzinfo is UTC
    assert paper.categories == ("math.ST",)
    assert paper.authors == (Author("Nick W. Koning"),)
    assert paper.journal_ref is None


def test_non_ascii_author_names() -> None:
    names = [a.name for a in current("2405.13786").authors]
    assert names == ["Aurora Ramírez", "Mario Berrios", "José Raúl Romero", "Robert Feldt"]


def test_newline_inside_current_backend_abstract_is_collapsed() -> None:
    abstract = current("2104.11069").abstract
    assert "other possible approaches. We consider that the presented algorithm" in abstract
    assert "\n" not in abstract
    assert current("2104.11069").categories == ("cs.SE", "cs.LG", "cs.PF")


def test_every_current_entry_is_whitespace_clean() -> None:
    for paper in _papers("api_query_testing_100.xml").values():
        for text in (paper.title, paper.abstract, *(a.name for a in paper.authors)):
            assert text == text.strip()
            assert not re.search(r"\s{2,}|\n", text)
        assert paper.categories[0] == paper.primary_category


# -- legacy backend ------------------------------------------------------------------------------------


def test_legacy_old_style_id_with_comment() -> None:
    paper = legacy("astro-ph/9904306")
    assert paper.version == 1
    assert paper.title == "Improved scenario of baryogenesis"
    assert paper.abstract.startswith(
        "It is assumed that, in the primordial plasma, at the temperatures above the mass of electron,"
    )
    assert paper.abstract.endswith("survive as protons and electrons.")
    assert paper.comment == "3 pages LaTeX"
    assert paper.primary_category == "astro-ph"
    assert paper.categories == ("astro-ph",)
    assert paper.authors == (Author("D. L. Khokhlov"),)


def test_legacy_hard_wrapped_title_and_non_ascii_affiliated_author() -> None:
    paper = legacy("hep-ph/9411242")
    assert paper.title == (
        "Proton-ring and Electron-linac Collider (PRELC) as a (first) "
        "TeV-rangeelectron-proton or photon-proton collider"
    )
    assert paper.authors == (Author("Raimo Vuopionperä", ("SEFT, Univ. Helsinki",)),)
    assert paper.published == utc("1994-11-08T11:19:41Z")


def test_legacy_version_two_with_doi_and_journal_ref() -> None:
    paper = legacy("1706.01836")
    assert paper.version == 2
    assert paper.title == (
        "Development of a Practical Multicomponent Density Functional for "
        "Electron-Proton Correlation to Produce Accurate Proton Densities"
    )
    assert paper.published == utc("2017-06-06T16:12:51Z")
    assert paper.updated == utc("2017-09-24T14:21:38Z")
    assert paper.doi == "10.1063/1.4996038"
    assert paper.journal_ref == "The Journal of Chemical Physics 147, 114113 (2017)"
    assert paper.comment is None
    assert paper.primary_category == "physics.chem-ph"
    assert [a.name for a in paper.authors] == [
        "Yang Yang",
        "Kurt R. Brorsen",
        "Tanner Culpitt",
        "Michael V. Pak",
        "Sharon Hammes-Schiffer",
    ]


def test_legacy_hard_wrapped_comment_and_several_categories() -> None:
    assert legacy("1403.6944").comment == (
        "4 pages, 4 figures, talk given at the 6th International Conference on Hard and Electromagnetic "
        "Probes of High-Energy Nuclear Collisions (Hard Probes 2013), November 4-8, 2013 (Cape Town, South Africa)"
    )
    assert legacy("1403.6944").authors[1] == Author("H. Mäntysaari")
    assert legacy("0806.3233").categories == ("cond-mat.other", "physics.bio-ph", "q-bio.SC")


def test_links_are_never_needed() -> None:
    """11-14 Nov 2025 arXiv sent <link>s without rel/type/title: the parser must not care."""
    for name in ("api_query_testing_100.xml", "api_query_legacy_10.xml"):
        stripped = re.sub(rb"<link [^>]*/>", b"", _raw(name))
        assert b"<link" not in stripped
        assert parse_feed(stripped).papers == parse_feed(_raw(name)).papers


def test_primary_category_falls_back_to_first_category_and_is_always_listed() -> None:
    body = _raw("api_query_testing_100.xml")
    no_primary = re.sub(rb"<arxiv:primary_category [^>]*/>", b"", body)
    assert current("2202.12139").primary_category == "cs.SE"
    assert parse_feed(no_primary).papers[0].primary_category == "cs.SE"
    # A primary missing from the <category> list still leads the categories, once.
    moved = body.replace(
        b'<arxiv:primary_category term="cs.SE"/>', b'<arxiv:primary_category term="cs.AI"/>', 1
    )
    first = parse_feed(moved).papers[0]
    assert (first.primary_category, first.categories) == ("cs.AI", ("cs.AI", "cs.SE", "cs.LG"))


def test_entry_without_an_arxiv_id_is_skipped_not_fatal() -> None:
    body = _raw("api_query_legacy_10.xml").replace(
        b"<id>http://arxiv.org/abs/astro-ph/9904306v1</id>", b"<id>not-an-id</id>"
    )
    page = parse_feed(body)
    assert len(page.papers) == 9
    assert "astro-ph/9904306" not in {p.arxiv_id for p in page.papers}


# -- hostile entries: each is skipped with its id, the rest of the page is kept ------------------------------


@pytest.mark.parametrize("case", list(HOSTILE_ENTRIES))
def test_a_hostile_entry_is_skipped_with_its_id_and_the_page_kept(case: str) -> None:
    good = [make_paper(n) for n in range(1, 5)]
    bad = hostile_entry(case)
    page = parse_feed(atom_feed([good[0], good[1], bad, good[2], good[3]], total=5, start=0))
    assert page.papers == good
    [skipped] = page.skipped
    assert page.entries == 5
    if case not in ("no id", "an id that is no arXiv id"):  # the log and /status can name the entry
        assert HOSTILE_ID in skipped.entry_id
    assert len(skipped.entry_id) <= 120 and skipped.reason


def test_an_entry_of_nested_garbage_is_skipped() -> None:
    garbage = RawEntry(
        f'<entry xmlns="{ATOM_NS}"><id><b>http://arxiv.org/abs/2611.10999v1</b></id>'
        "<title><title><title/></title></title><author/><author><name><x/></name></author>"
        "<published>2026-11-01T00:00:00Z</published><category/></entry>"
    )
    page = parse_feed(atom_feed([make_paper(1), garbage, make_paper(2)], total=3, start=0))
    assert [p.arxiv_id for p in page.papers] == [make_paper(1).arxiv_id, make_paper(2).arxiv_id]
    assert len(page.skipped) == 1


# -- every field is bounded before anything else reads it ----------------------------------------------------


def test_every_field_is_bounded_at_parse_time() -> None:
    authors = (
        Author("N" * 50_000, tuple(f"Institute {i} " + "A" * 10_000 for i in range(100))),
        *(Author(f"Author {i}") for i in range(1, 5_000)),
    )
    huge = make_paper(
        1,
        title="Title " * 20_000,
        abstract="word " * 200_000,
        comment="c" * 100_000,
        journal_ref="j" * 100_000,
        doi="10.1000/" + "d" * 100_000,
        authors=authors,
        primary_category="cs.LG",
        categories=("cs.LG", *(f"x.Y{i}" for i in range(500))),
    )
    [paper] = parse_feed(atom_feed([huge], total=1, start=0)).papers
    assert len(paper.title) == limits.TITLE and paper.title.endswith("…")
    assert len(paper.abstract) == limits.ABSTRACT and paper.abstract.startswith("word word")
    assert paper.comment and len(paper.comment) == limits.COMMENT
    assert paper.journal_ref and len(paper.journal_ref) == limits.JOURNAL_REF
    assert paper.doi and len(paper.doi) == limits.DOI
    # A collaboration keeps its first authors, in order, and how many more there were.
    assert len(paper.authors) == limits.AUTHORS and paper.authors_omitted == 5_000 - limits.AUTHORS
    assert [a.name for a in paper.authors[1:4]] == ["Author 1", "Author 2", "Author 3"]
    first = paper.authors[0]
    assert len(first.name) == limits.AUTHOR_NAME
    assert len(first.affiliations) == limits.AFFILIATIONS
    assert all(len(a) == limits.AFFILIATION for a in first.affiliations)
    assert first.affiliations[1].startswith("Institute 1 A")
    assert len(paper.categories) == limits.CATEGORIES and paper.categories[:2] == ("cs.LG", "x.Y0")


def test_ordinary_fields_are_kept_whole() -> None:
    """The bounds are far above arXiv's own: no real entry is ever cut."""
    for name in ("api_query_testing_100.xml", "api_query_legacy_10.xml"):
        for paper in _papers(name).values():
            texts = [paper.title, paper.abstract, paper.comment or "", paper.journal_ref or ""]
            texts += [a.name for a in paper.authors] + [x for a in paper.authors for x in a.affiliations]
            assert not any(t.endswith("…") for t in texts) and paper.authors_omitted == 0


# -- errors and hostile input -------------------------------------------------------------------------

# arXiv's error answer, in the legacy backend's shape.
ARXIV_ERROR = b"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title type="html">ArXiv Query: search_query=&amp;id_list=1234.12345&amp;start=0&amp;max_results=10</title>
  <id>http://arxiv.org/api/kvuntZ8c9a4Eq5CF7KY03nMug+Q</id>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345</id>
    <title>Error</title>
    <summary>incorrect id format for 1234.12345</summary>
    <updated>2022-08-23T00:00:00-04:00</updated>
    <author><name>arXiv api core</name></author>
  </entry>
</feed>
"""


def test_error_entry_raises_query_error_with_query_and_message() -> None:
    with pytest.raises(ArxivQueryError) as info:
        parse_feed(ARXIV_ERROR, query="id_list=1234.12345")
    assert info.value.query == "id_list=1234.12345"
    assert info.value.detail == "incorrect id format for 1234.12345"
    assert "id_list=1234.12345" in str(info.value)


def test_error_feed_from_the_fake_is_recognised() -> None:
    with pytest.raises(ArxivQueryError, match="unbalanced parentheses"):
        parse_feed(error_feed("unbalanced parentheses"), query="(cat:cs.AI")


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<feed xmlns="http://www.w3.org/2005/Atom"><title>&lol9;</title></feed>
"""


def _xxe(system_id: str, *, encoding: str = "UTF-8") -> bytes:
    text = f"""<?xml version="1.0" encoding="{encoding}"?>
<!DOCTYPE feed [ <!ENTITY xxe SYSTEM "{system_id}"> ]>
<feed xmlns="http://www.w3.org/2005/Atom"><title>&xxe;</title></feed>
"""
    return text.encode(encoding)


@pytest.mark.parametrize(
    "document",
    [
        BILLION_LAUGHS,
        _xxe("file:///etc/passwd"),
        b"\xef\xbb\xbf<?xml version='1.0'?>\n<!-- note -->\n<!doctype feed>\n<feed xmlns='http://www.w3.org/2005/Atom'/>",
        BILLION_LAUGHS.decode()
        .replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
        .encode("utf-16"),
        _xxe("file:///etc/passwd", encoding="UTF-16"),
        # Past the 64 KB prolog scan: the check after parsing catches it.
        b"<?xml version='1.0'?><!--" + b"x" * 70_000 + b"-->" + _xxe("file:///etc/passwd").split(b"?>", 1)[1],
    ],
    ids=[
        "billion-laughs",
        "xxe-file",
        "bom-comment-lowercase",
        "billion-laughs-utf16",
        "xxe-file-utf16",
        "after-long-comment",
    ],
)
def test_doctype_documents_are_refused(document: bytes) -> None:
    with pytest.raises(UnsafeFeed, match="DOCTYPE"):
        parse_feed(document)


def test_parser_itself_neither_expands_nor_reads_files(tmp_path: Path) -> None:
    """Second line of defence, below the DOCTYPE refusal: the lxml parser configuration alone."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    xxe = etree.fromstring(_xxe(secret.as_uri()), _make_parser())
    assert "TOP-SECRET-CONTENT" not in etree.tostring(xxe, encoding="unicode")


def test_parser_itself_does_not_expand_a_billion_laughs() -> None:
    try:
        bomb = etree.fromstring(BILLION_LAUGHS, _make_parser())
    except etree.XMLSyntaxError as exc:  # libxml2 may refuse the amplification outright: also fine
        assert "amplification" in str(exc)
        return
    assert len(etree.tostring(bomb)) < 1000


async def test_no_network_fetch_for_external_dtd_or_entity() -> None:
    async with LoopbackArxiv() as fa:
        target = f"{fa.rss_url}/xxe"
        for encoding in ("UTF-8", "UTF-16"):
            document = (
                f'<?xml version="1.0" encoding="{encoding}"?>\n'
                f'<!DOCTYPE feed SYSTEM "{fa.rss_url}/dtd" [ <!ENTITY xxe SYSTEM "{target}"> ]>\n'
                '<feed xmlns="http://www.w3.org/2005/Atom"><title>&xxe;</title></feed>'
            ).encode(encoding)
            # In a thread, so a (wrongly) blocking fetch could still be answered and recorded.
            with pytest.raises(UnsafeFeed):
                await asyncio.to_thread(parse_feed, document)
        assert fa.requests == []


@pytest.mark.parametrize(
    "document",
    [
        _raw("api_query_testing_100.xml")[: len(_raw("api_query_testing_100.xml")) // 2],
        _raw("api_query_legacy_10.xml")[:-20],
        b"<html><head><title>503 Service Unavailable</title></head><body><h1>Busy</h1></body></html>",
        b"Rate exceeded.",
        b"",
        b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>no counts</title></feed>',
    ],
    ids=["truncated-current", "truncated-legacy", "html-page", "plain-text", "empty", "no-opensearch-counts"],
)
def test_broken_documents_are_malformed_not_unsafe(document: bytes) -> None:
    with pytest.raises(MalformedFeed) as info:
        parse_feed(document)
    assert not isinstance(info.value, UnsafeFeed)


# -- round trip through the fake's renderer -----------------------------------------------------------

_CATS = ["cs.AI", "cs.LG", "cs.CL", "stat.ML", "math.ST", "hep-ph", "astro-ph", "q-bio.SC"]
_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cn", "Co")),
    min_size=1,
    max_size=60,
).map(lambda s: " ".join(s.split()))
_WORDS = _TEXT.filter(bool)
_TIME = st.datetimes(
    min_value=datetime(1991, 8, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=0))
_ID = st.one_of(
    st.from_regex(r"\A[0-9]{4}\.[0-9]{4,5}\Z"),
    st.from_regex(r"\A[a-z]{2,8}(-[a-z]{2,3})?/[0-9]{7}\Z"),
)


@st.composite
def papers(draw: st.DrawFn) -> Paper:
    cats = draw(st.lists(st.sampled_from(_CATS), min_size=1, max_size=4, unique=True))
    return Paper(
        arxiv_id=draw(_ID),
        version=draw(st.integers(1, 40)),
        title=draw(_TEXT),
        abstract=draw(_TEXT),
        authors=tuple(
            draw(st.lists(st.builds(Author, _WORDS, st.lists(_WORDS, max_size=2).map(tuple)), max_size=4))
        ),
        primary_category=cats[0],
        categories=tuple(draw(st.permutations(cats))),
        published=draw(_TIME),
        updated=draw(_TIME),
        comment=draw(st.none() | _WORDS),
        journal_ref=draw(st.none() | _WORDS),
        doi=draw(st.none() | _WORDS),
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(papers(), max_size=5), st.integers(0, 50))
def test_atom_feed_round_trip(items: list[Paper], start: int) -> None:
    page = parse_feed(atom_feed(items, total=start + len(items) + 3, start=start))
    assert page.papers == items
    assert (page.total_results, page.start_index, page.items_per_page) == (
        start + len(items) + 3,
        start,
        len(items),
    )


def test_round_trip_of_every_recorded_paper() -> None:
    """The fake's renderer carries every field of every real entry (affiliations, doi, comment...)."""
    for name in ("api_query_testing_100.xml", "api_query_legacy_10.xml"):
        real = list(_papers(name).values())
        assert parse_feed(atom_feed(real, total=999, start=0)).papers == real
