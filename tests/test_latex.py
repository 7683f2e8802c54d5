"""bot.latex: arXiv LaTeX-ish text comes out readable, plain text stays intact, nothing ever raises."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

import bot.latex
from bot.latex import PIECE_MAX, latex_to_text, pieces
from tests.shared_files import FIXTURES

ATOM = {"a": "http://www.w3.org/2005/Atom"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("GD $^2$ PO", "GD² PO"),
        (r"{\sim}15", "~15"),
        (r"$p(1{-}p)(g{-}1)/g$", "p(1-p)(g-1)/g"),
        (r"$4\times$ faster", "4× faster"),
        (r"$\alpha$-divergence", "α-divergence"),
        (r"$\mathcal{O}(n \log n)$", "O(n log n)"),
        (r"\textit{et al.}", "et al."),
        (r"$\leq$", "≤"),
        (r"$x_i$", "xᵢ"),
        (r"\emph{foo}", "foo"),
        (r"$10^{31}$ to $10^{32}$", "10³¹ to 10³²"),
        (r"the $e^+e^-$-collider", "the e⁺e⁻-collider"),
        (r"$T \approx 37 ^{\circ}$", "T ≈ 37°"),
        (r"(200-500 {\deg}C)", "(200-500 °C)"),
        (r"$\tilde{O}(\varepsilon^{-2})$ queries", "Õ(ε⁻²) queries"),
        (r"$\varepsilon_1 = \varepsilon_2/2$", "ε₁ = ε₂/2"),
        (r"$\Theta(\sqrt{n})$", "Θ(√n)"),
        (r"$\frac{n+1}{2}$", "(n+1)/2"),
        (r"$W^\top x$ and $f^\prime$", "Wᵀx and f′"),
        (r"$x_\mathrm{max}$ vs $x_{\text{train}}$", "x_max vs x_train"),
        (r"$O(n^{1.5})$", "O(n^(1.5))"),
        (r"$x^{n - 1}$", "xⁿ⁻¹"),
        (r"$X \sim N(\mathbfθ, I_\infty)$", "X ~ N(θ, I_∞)"),  # arXiv's "\mathbfθ" (θ glued to the name)
        (r"$\|x\|_2$", "‖x‖₂"),
        (r"M\"uller and Sch\'{e}ma", "Müller and Schéma"),
        (r"shown in \cite{smith}.", "shown in."),
        ("10--20 tokens", "10–20 tokens"),
        (r"$x^{2$ and \textbf{bold", "x² and bold"),  # unclosed braces read as if closed at the end
        (r"$\frac{1}{2$ rate", "1/2 rate"),
    ],
)
def test_latex_examples_come_out_readable(source: str, expected: str) -> None:
    assert latex_to_text(source) == expected


@pytest.mark.parametrize(
    "plain",
    [
        "costs $5 and 10%",
        "a 10% gain, 25% fewer steps",
        "path C:\\temp and a lone \\ backslash",
        "ends with a backslash \\",
        "R&D at AT&T",
        "snake_case and x^2 in prose",
        "price $ alone",
        "email me@example.org",
    ],
)
def test_plain_text_with_lone_specials_stays_intact(plain: str) -> None:
    assert latex_to_text(plain) == plain


def test_money_next_to_math_keeps_the_dollar() -> None:
    assert latex_to_text(r"we pay $5 per $k$-shot query") == "we pay $5 per k-shot query"


def test_tilde_before_a_number_means_about() -> None:
    assert latex_to_text("~15% faster, see~Table 1") == "~15% faster, see Table 1"


def test_whitespace_is_normalised() -> None:
    assert latex_to_text("  Deep\n  learning\t\tfor $x$\n\n rocks  ") == "Deep learning for x rocks"


def _fixture_texts(name: str) -> list[str]:
    root = etree.parse(str(FIXTURES / name))
    return [
        node.text or ""
        for entry in root.findall("a:entry", ATOM)
        for node in (entry.find("a:title", ATOM), entry.find("a:summary", ATOM))
    ]


def test_fixture_abstract_with_exponents_reads_naturally() -> None:
    texts = _fixture_texts("api_query_legacy_10.xml")
    prelc = next(t for t in texts if "$10^{31}$" in t)
    out = latex_to_text(prelc)
    assert "luminosities in the range of 10³¹ to 10³² could be achieved" in out
    assert "with the e⁺e⁻-collider" in out
    assert "$" not in out and "\n" not in out


@pytest.mark.parametrize("name", ["api_query_legacy_10.xml", "api_query_testing_100.xml"])
def test_fixture_texts_lose_their_markup_but_not_their_words(name: str) -> None:
    for text in _fixture_texts(name):
        out = latex_to_text(text)
        assert "$" not in out  # every fixture dollar is math
        assert "\\mathbf" not in out and "\\varepsilon" not in out
        # Words outside math survive: the first and last plain words of the text are kept.
        words = [w for w in text.split() if w.isalpha()]
        assert words[0] in out and words[-1] in out


_LATEXISH = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "$",
                "$$",
                "\\",
                "{",
                "}",
                "^",
                "_",
                "%",
                "&",
                "~",
                "\\frac",
                "\\sqrt[",
                "\\begin{x}",
                "\\end{y}",
                "\\mathbf",
                "\\alpha",
                "\\verb|",
                "\\cite{",
                "{\\sim}",
                "\\\\",
                "\\%",
                "\\$",
                "#",
                "''",
                "``",
            ]
        ),
        st.text(max_size=12),
    ),
    max_size=60,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(_LATEXISH)
def test_never_raises_and_returns_one_clean_line(text: str) -> None:
    out = latex_to_text(text)
    assert isinstance(out, str)
    assert out == out.strip()
    assert "\n" not in out and "  " not in out
    assert "\ue000" not in out  # the internal glue mark never leaks


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(categories=["L", "N", "Zs"]), max_size=200))
def test_letters_and_digits_pass_through_unchanged(text: str) -> None:
    assert latex_to_text(text) == " ".join(text.split())


def test_deep_nesting_falls_back_instead_of_raising() -> None:
    # Nesting deeper than Python's recursion limit: pylatexenc fails, the fallback keeps the words and money.
    text = "{" * 5000 + "x" + "}" * 5000 + " in $O(n)$, costs $3"
    out = latex_to_text(text)
    assert out.endswith("x" + "}" * 5000 + " in O(n), costs $3")


# ---------------------------------------------------------------------------------------------------------
# Work linear in the length: counted, not timed (the timings are in bench/)


def _work(convert: Callable[[str], object], text: str) -> int:
    """Function calls, Python and built-in, made while converting `text`: a count that cannot be a clock."""
    calls = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(profile)
    try:
        convert(text)
    finally:
        sys.setprofile(None)
    return calls


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


_PROSE = r"We bound $O(n^2)$ for the \emph{sparse} case, with {\sim}15% gains at $\epsilon_i$. "


@pytest.mark.parametrize(
    "unit",
    [
        r"_\mathrm{",  # a script macro whose brace never closes: was a scan to the end per macro
        "$",  # renders to a long run of whitespace: was a quadratic regex on it
        "\\",
        "{",
        "x^",
        "\\alpha_{",
        "$x^{",  # unclosed groups: the tolerant parser nested all that follows ever deeper
        _PROSE,
    ],
    ids=["script-macro", "dollars", "backslashes", "braces", "carets", "macros", "nested", "prose"],
)
def test_work_grows_linearly_with_the_length(unit: str) -> None:
    small, large = _work(latex_to_text, _repeat(unit, 25_000)), _work(latex_to_text, _repeat(unit, 100_000))
    assert large <= 4.4 * small, (small, large)


@pytest.mark.parametrize("unit", [r"\frac{", r"\sqrt[", r"\href{", r"$\frac{x^{"])
def test_unclosed_arguments_cost_linear_work_not_exponential(unit: str) -> None:
    # pylatexenc's tolerant parser retried these exponentially: 16 took seconds, 30 would take hours.
    assert _work(latex_to_text, unit * 16) <= 2.5 * _work(latex_to_text, unit * 8)
    assert latex_to_text(unit * 40).startswith(unit.replace("$", "")[:4])


def test_long_text_is_converted_in_bounded_pieces_that_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _repeat(_PROSE, 100_000)
    seen: list[int] = []
    convert = bot.latex._convert

    def counting(piece: str) -> str:
        seen.append(len(piece))
        return convert(piece)

    monkeypatch.setattr(bot.latex, "_convert", counting)
    out = latex_to_text(text)
    assert max(seen) <= PIECE_MAX and sum(seen) <= len(text)
    # Read the same as converting it whole would: every complete sentence exactly as on its own.
    assert out.startswith(" ".join([convert(_PROSE)] * (len(text) // len(_PROSE))))
    assert "O(n²)" in out and "$" not in out and "\\emph" not in out


def test_pieces_are_cut_only_between_plain_words_at_top_level() -> None:
    group = [r"$a b$", "one", "two", r"{c d}", "three", r"\textbf x", "four", r"\begin{e} f \end{e}", "five"]
    words = ["plain"] * 700 + group * 300
    cut = pieces(" ".join(words))
    assert cut is not None and len(cut) > 3
    for piece in cut:
        assert len(piece) <= PIECE_MAX
        assert piece.count("$") % 2 == 0 and piece.count("{") == piece.count("}")
        assert piece.count("\\begin") == piece.count("\\end")
        assert not piece.rstrip().endswith("\\textbf")


def test_text_without_a_safe_cut_falls_back_to_plain_text() -> None:
    text = "{" * 3000 + "$x$ and " * 1000 + "}" * 3000
    assert pieces(text) is None
    assert latex_to_text(text).startswith("{" * 3000 + "x and x and")
