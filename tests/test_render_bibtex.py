"""The reading list's BibTeX: every special escaped, read back by a BibTeX parser to the text the card shows,
the fields arXiv's own export has, keys unique."""

from __future__ import annotations

import bibtexparser
from bibtexparser.middlewares import LatexDecodingMiddleware
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.models import Author
from bot.render.bibtex import bibtex_entries, citation_key
from bot.render.latex import latex_to_text
from tests.factories import make_paper


def _read(text: str) -> list[dict[str, str]]:
    library = bibtexparser.parse_string(text, append_middleware=[LatexDecodingMiddleware()])
    assert library.failed_blocks == []
    return [
        {"key": e.key, "type": e.entry_type, **{f.key: f.value for f in e.fields}} for e in library.entries
    ]


def test_an_entry_has_the_fields_of_arxivs_own_export() -> None:
    paper = make_paper(
        1,
        arxiv_id="2401.12345",
        title="Group Relative Policy Optimization",
        authors=(Author("Ada Lovelace"), Author("Alan Turing")),
        primary_category="cs.LG",
    )
    [entry] = _read(bibtex_entries([paper]))
    assert entry == {
        "key": "lovelace2026group",
        "type": "misc",
        "author": "Ada Lovelace and Alan Turing",
        "title": "Group Relative Policy Optimization",
        "year": "2026",
        "eprint": "2401.12345",
        "archivePrefix": "arXiv",
        "primaryClass": "cs.LG",
        "url": "https://arxiv.org/abs/2401.12345",
    }


def test_latex_specials_and_accents_are_escaped_and_read_back() -> None:
    title = r"50\% of R\&D_x: caf\'e \emph{na\"ive} {GRPO} #1 $\alpha$-tuning ~ 2^{k} a{b"
    paper = make_paper(1, title=title, authors=(Author("Émile Zola"), Author("Søren Kierkegaard")))
    text = bibtex_entries([paper])
    [entry] = _read(text)
    # \textasciicircum is LaTeX's caret; pylatexenc's reader shows it as the modifier letter ˆ.
    assert entry["title"].replace("ˆ", "^") == " ".join(latex_to_text(title).split())
    assert entry["author"] == "Émile Zola and Søren Kierkegaard"
    for raw in ("50%", "R&D", "_x", " #1", "2^"):  # each special appears only escaped
        assert raw not in text
    assert entry["key"] == "zola202650"  # the first title word that is not a stop word


def test_a_collaboration_named_with_and_stays_one_author() -> None:
    paper = make_paper(1, authors=(Author("ATLAS and CMS Collaborations"), Author("Ada Lovelace")))
    [entry] = _read(bibtex_entries([paper]))
    library = bibtexparser.parse_string(bibtex_entries([paper]))
    names = bibtexparser.middlewares.SeparateCoAuthors().transform(library).entries[0]["author"]
    assert len(names) == 2 and "Ada Lovelace" in entry["author"]


def test_keys_are_unique_and_ascii() -> None:
    papers = [make_paper(n, title="The same title", authors=(Author("Ærø Ñúñez"),)) for n in range(30)]
    keys = [e["key"] for e in _read(bibtex_entries(papers))]
    assert len(set(keys)) == 30
    assert keys[:3] == ["nunez2026same", "nunez2026sameb", "nunez2026samec"]
    assert keys[25:27] == ["nunez2026samez", "nunez2026sameaa"]
    assert citation_key(make_paper(1, authors=())) == "anon2026paper"


def test_no_papers_no_entries() -> None:
    assert bibtex_entries([]) == ""


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=80)
)
def test_any_title_makes_an_entry_a_parser_reads(title: str) -> None:
    papers = [make_paper(1, title=title), make_paper(2)]
    entries = _read(bibtex_entries(papers))
    assert [e["eprint"] for e in entries] == [papers[0].arxiv_id, papers[1].arxiv_id]
    assert entries[1]["title"] == papers[1].title
