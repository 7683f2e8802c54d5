"""LaTeX in arXiv titles and abstracts -> readable Unicode text (pylatexenc based, never raises).

arXiv metadata is half LaTeX, half plain text: "GD $^2$ PO", "{\\sim}15", but also "costs $5 and 10%".
pylatexenc does the heavy lifting; this module guards the plain-text cases it would mangle (`%` starts a
comment, a lone `$` opens math, a lone `\\` eats the next word) and adds what it lacks: Unicode super- and
subscripts, plain letters for \\mathcal/\\mathbf, and `~` for \\sim.

The work is linear in the length of the text whatever it holds: long text is converted in bounded pieces,
unmatched braces become spaces before parsing, and the parser reads a bounded number of tokens per character
(hostile text past any bound comes back as plain text).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pylatexenc import latex2text, latexwalker, macrospec
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, SpecialsTextSpec

__all__ = ["latex_to_text"]

# Private-use mark emitted before a rendered super/subscript: every space before it is dropped afterwards,
# so "GD $^2$ PO" reads "GD² PO" and "37 ^{\circ}" reads "37°". Stripped from the input first.
_GLUE = "\ue000"

_SUPERSCRIPT = dict(
    zip(
        "0123456789+-−=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVWαβγδεϵθιφχ",
        "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵅᵝᵞᵟᵋᵋᶿᶥᵠᵡ",
        strict=True,
    )
)
# Symbols that read fine as they are after a base ("x*", "f′", "A†") or have a conventional stand-in.
_SUPERSCRIPT.update({"∘": "°", "°": "°", "⊤": "ᵀ", "'": "′", "′": "′", "″": "″", "*": "*", "∗": "*"})
_SUPERSCRIPT.update({"†": "†", "‡": "‡"})

_SUBSCRIPT = dict(
    zip("0123456789+-−=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ", strict=True)
)

# Rendered scripts may be nested (a^{b^c}): already-converted characters map to themselves.
for _table in (_SUPERSCRIPT, _SUBSCRIPT):
    _table.update({v: v for v in list(_table.values())})

# Unicode has letters for every subscript/superscript digit but only some letters, and long letter runs
# ("x_train") read better with an underscore than as tiny glyphs.
_MAX_SCRIPT_LETTERS = 2

# One-argument macros that may follow ^ or _ without braces (x_\mathrm{max}); pylatexenc would take only
# the macro name as the script argument, so they get wrapped in braces first.
_SCRIPT_ARG_MACROS = frozenset(
    [
        "mathrm",
        "text",
        "textrm",
        "textit",
        "textbf",
        "texttt",
        "textsf",
        "mathbf",
        "mathcal",
        "mathit",
        "mathsf",
        "mathtt",
        "mathbb",
        "mathscr",
        "mathfrak",
        "operatorname",
        "hat",
        "tilde",
        "bar",
        "vec",
        "dot",
        "ddot",
        "boldsymbol",
        "bm",
        "widehat",
        "widetilde",
        "overline",
        "sqrt",
        "emph",
    ]
)


# ---------------------------------------------------------------------------------------------------------
# Conversion callbacks (pylatexenc calls them with the node and the converter).


def _arg_text(node: latexwalker.LatexNode, l2tobj: LatexNodes2Text, index: int = 0) -> str:
    args = node.nodeargd.argnlist if node.nodeargd and node.nodeargd.argnlist else []
    if index >= len(args) or args[index] is None:
        return ""
    return l2tobj._groupnodecontents_to_text(args[index])


def _to_script(text: str, table: dict[str, str]) -> str | None:
    """Map every character through `table`, or None when one has no Unicode script form."""
    letters = sum(ch.isalpha() for ch in text)
    if not text or letters > _MAX_SCRIPT_LETTERS:
        return None
    if any(ch not in table for ch in text):
        return None
    return "".join(table[ch] for ch in text)


def _script(node: latexwalker.LatexSpecialsNode, l2tobj: LatexNodes2Text) -> str:
    """`^x` / `_{...}`: Unicode super/subscripts where they exist, else `x^(n+m+k)`-style plain text."""
    if not node.parsing_state.in_math_mode:
        return node.latex_verbatim()  # snake_case in prose stays as written
    sign = node.specials_chars
    # Spaces inside math are insignificant: "n - 1" -> "n-1" before mapping.
    text = "".join(_arg_text(node, l2tobj).replace(_GLUE, "").split())
    mapped = _to_script(text, _SUPERSCRIPT if sign == "^" else _SUBSCRIPT)
    if mapped is not None:
        return _GLUE + mapped
    if len(text) <= 1 or text.isalnum():
        return _GLUE + sign + text
    return _GLUE + f"{sign}({text})"


def _plain_arg(node: latexwalker.LatexMacroNode, l2tobj: LatexNodes2Text) -> str:
    return _arg_text(node, l2tobj, 0)


def _wrap(part: str) -> str:
    return part if len(part) <= 1 or part.isalnum() else f"({part})"


def _frac(node: latexwalker.LatexMacroNode, l2tobj: LatexNodes2Text) -> str:
    num, den = _arg_text(node, l2tobj, 0).strip(), _arg_text(node, l2tobj, 1).strip()
    return f"{_wrap(num)}/{_wrap(den)}"


def _sqrt(node: latexwalker.LatexMacroNode, l2tobj: LatexNodes2Text) -> str:
    root = _arg_text(node, l2tobj, 0).strip()  # optional [n]
    body = _wrap(_arg_text(node, l2tobj, 1).strip())
    prefix = {"": "√", "2": "√", "3": "∛", "4": "∜"}.get(root)
    return f"{prefix}{body}" if prefix else f"{_wrap(root)}√{body}"


def _href(node: latexwalker.LatexMacroNode, l2tobj: LatexNodes2Text) -> str:
    return _arg_text(node, l2tobj, 1) or _arg_text(node, l2tobj, 0)


def _unknown_macro(node: latexwalker.LatexMacroNode, l2tobj: LatexNodes2Text) -> str:
    """Keep an unknown `\\name` visible (often not LaTeX at all: "C:\\temp", "\\n"); if it took arguments,
    or a braced group follows, show just the text of those."""
    args = node.nodeargd.argnlist if node.nodeargd and node.nodeargd.argnlist else []
    if any(arg is not None for arg in args):
        return "".join(l2tobj._groupnodecontents_to_text(arg) for arg in args)
    source: str = node.parsing_state.s
    end = node.pos + node.len
    if source[end : end + 1] == "{":
        return ""
    return "\\" + node.macroname + node.macro_post_space


def _text_specs() -> dict[str, list[object]]:
    plain = [
        "mathcal",
        "mathscr",
        "mathfrak",
        "mathbf",
        "mathit",
        "mathsf",
        "mathtt",
        "boldsymbol",
        "bm",
        "texttt",
        "url",
        "operatorname",
        "textsuperscript",
        "textsubscript",
    ]
    fixed: dict[str, str] = {
        "sim": "~",
        "|": "‖",
        "LaTeX": "LaTeX",
        "TeX": "TeX",
        "xspace": "",
        "deg": "°",  # arXiv writes a typed "°" as {\deg}
        "colon": ":",
        "textgreater": ">",
        "textless": "<",
    }
    # A dropped citation takes the space before it along: "shown \cite{x}." -> "shown."
    fixed.update({name: _GLUE for name in ("cite", "citet", "citep")})
    callables: dict[str, Callable[..., str]] = {
        "frac": _frac,
        "dfrac": _frac,
        "tfrac": _frac,
        "sqrt": _sqrt,
        "href": _href,
    }
    macros: list[object] = [MacroTextSpec(name, simplify_repl=_plain_arg) for name in plain]
    macros += [MacroTextSpec(name, simplify_repl=repl) for name, repl in fixed.items()]
    macros += [MacroTextSpec(name, simplify_repl=fn) for name, fn in callables.items()]
    specials: list[object] = [SpecialsTextSpec(sign, simplify_repl=_script) for sign in "^_"]
    specials.append(SpecialsTextSpec("&", "&"))  # "R&D" in prose, not a table column
    return {"macros": macros, "specials": specials}


def _build_contexts() -> tuple[macrospec.LatexContextDb, macrospec.LatexContextDb]:
    walker_db = latexwalker.get_default_latex_context_db()
    one_arg = "{"
    walker_db.add_context_category(
        "paperwatch",
        prepend=True,
        macros=[
            macrospec.MacroSpec(name, one_arg)
            for name in ("bm", "boldsymbol", "operatorname", "mathfrak", "textsuperscript", "textsubscript")
        ]
        + [macrospec.MacroSpec(name, "{{") for name in ("href", "dfrac", "tfrac")],
        specials=[
            macrospec.SpecialsSpec(sign, args_parser=macrospec.MacroStandardArgsParser("{")) for sign in "^_"
        ],
    )
    text_db = latex2text.get_default_latex_context_db()
    text_db.add_context_category("paperwatch", prepend=True, **_text_specs())
    text_db.set_unknown_macro_spec(MacroTextSpec("", simplify_repl=_unknown_macro))
    return walker_db, text_db


_WALKER_DB, _TEXT_DB = _build_contexts()


# ---------------------------------------------------------------------------------------------------------
# Guards applied to the raw text before parsing.

_UNESCAPED = r"(?<!\\)(?:\\\\)*"  # an even run of backslashes: the next char is not escaped
_PERCENT = re.compile(rf"({_UNESCAPED})%")
_DOLLAR = re.compile(rf"{_UNESCAPED}(\$)")
_LONE_BACKSLASH = re.compile(r"(?:(?<!\S)\\(?=\s)|(?<!\\)\\$)")
_MACRO_THEN_UNICODE = re.compile(r"(\\[A-Za-z]+)(?=[^\x00-\x7f])")
_TILDE_NUMBER = re.compile(r"(?<![\\\w])~(?=\d)")
_SCRIPT_MACRO = re.compile(r"([_^])\s*\\([A-Za-z]+)\s*\{")
_CURRENCY = re.compile(r"\$\d")
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)  # an escaped char, or a brace


def _balance_dollars(text: str) -> str:
    """An odd number of `$` means one is money, not math: escape it (the first "$5", else the last)."""
    positions = [m.start(1) for m in _DOLLAR.finditer(text)]
    if len(positions) % 2 == 0:
        return text
    money = [p for p in positions if _CURRENCY.match(text, p) and (p == 0 or not text[p - 1].isalnum())]
    pos = money[0] if money else positions[-1]
    return text[:pos] + "\\" + text[pos:]


def _brace_pairs(text: str) -> dict[int, int]:
    """Position of every `{` -> its matching `}`, in one pass (escaped braces never count)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for match in _BRACE_TOKEN.finditer(text):
        token = match.group()
        if token == "{":
            stack.append(match.start())
        elif token == "}" and stack:
            pairs[stack.pop()] = match.start()
    return pairs


class _OverBudget(Exception):
    """The text costs more than LaTeX worth reading can: it is shown as plain text instead."""


# Groups nested deeper than this are not LaTeX worth reading (real metadata nests a few levels): fallback.
_MAX_DEPTH = 32


def _balance_braces(text: str) -> str:
    """Unmatched braces made spaces (pylatexenc's tolerant parser drops them anyway, but only after nesting
    everything that follows an unclosed "{" ever deeper, at a cost growing with the depth)."""
    unmatched: list[int] = []
    stack: list[int] = []
    for match in _BRACE_TOKEN.finditer(text):
        token = match.group()
        if token == "{":
            stack.append(match.start())
            if len(stack) > _MAX_DEPTH:
                raise _OverBudget
        elif token == "}":
            if stack:
                stack.pop()
            else:
                unmatched.append(match.start())
    if not unmatched and not stack:
        return text
    out, pos = [], 0
    for at in sorted(unmatched + stack):
        out.append(text[pos:at] + " ")  # a space: "\textbf{bold" must not become "\textbfbold"
        pos = at + 1
    out.append(text[pos:])
    return "".join(out)


def _brace_script_macros(text: str) -> str:
    r"""`x_\mathrm{max}` -> `x_{\mathrm{max}}` so the whole macro becomes the subscript."""
    out: list[str] = []
    pos = 0
    pairs: dict[int, int] | None = None  # computed once, and only when a candidate appears
    for match in _SCRIPT_MACRO.finditer(text):
        if match.start() < pos or match.group(2) not in _SCRIPT_ARG_MACROS:
            continue
        if pairs is None:
            pairs = _brace_pairs(text)
        close = pairs.get(match.end() - 1)
        if close is None:
            continue
        out += [text[pos : match.start()], match.group(1), "{", text[match.start() + 1 : close + 1], "}"]
        pos = close + 1
    out.append(text[pos:])
    return "".join(out)


def _prepare(text: str) -> str:
    text = text.replace(_GLUE, "")
    text = _MACRO_THEN_UNICODE.sub(r"\1 ", text)  # arXiv writes "\mathbfθ": the name ends at the θ
    text = _LONE_BACKSLASH.sub(r"\\textbackslash{}", text)
    text = _PERCENT.sub(r"\1\\%", text)
    text = _TILDE_NUMBER.sub(r"{\\sim}", text)  # "~15%" means "about 15%", not a non-breaking space
    text = _balance_dollars(text)
    return _brace_script_macros(_balance_braces(text))


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _fallback(text: str) -> str:
    """Input with its math `$` stripped: what a reader would see if LaTeX were ignored. Money stays."""
    try:
        balanced = _balance_dollars(text.replace(_GLUE, ""))
        return _normalise(_DOLLAR.sub(lambda m: m.group(0)[:-1], balanced).replace("\\$", "$"))
    except Exception:  # regex engines can hit limits on pathological input too
        return _normalise(text.replace("$", "").replace(_GLUE, ""))


# ---------------------------------------------------------------------------------------------------------
# Long text is converted in pieces of bounded size, cut only where LaTeX cannot span the cut, so the work is
# linear in the length whatever the text holds (no guard or parser step ever sees more than PIECE_MAX).

PIECE_CHARS = 2000  # a piece ends at the first safe cut after this many characters
PIECE_MAX = 4000  # text with no safe cut within this many characters is not LaTeX worth reading: fallback
# What can carry LaTeX state across a space: an escape or macro, a brace, a math delimiter, an environment.
_STATE_TOKEN = re.compile(r"\\(?:begin|end)(?![A-Za-z])|\\.|\$\$|[${} ]", re.DOTALL)


def pieces(text: str) -> list[str] | None:
    """`text` (whitespace already collapsed) cut at spaces between two words without LaTeX, outside
    braces, math and environments, into pieces of at most PIECE_MAX characters; None if it cannot be."""
    if len(text) <= PIECE_MAX:
        return [text]
    cuts: list[str] = []
    start = depth = env = 0
    math = False
    plain_word = True  # no state token since the last space
    candidate = -1  # the last space after a plain word at top level: safe if the next word is plain too
    for match in _STATE_TOKEN.finditer(text):
        token, pos = match.group(), match.start()
        if pos - start > PIECE_MAX:
            return None
        if token == " ":
            if plain_word and candidate - start >= PIECE_CHARS:
                cuts.append(text[start:candidate])
                start = candidate
            top_level = depth == 0 and env == 0 and not math
            candidate = pos if plain_word and top_level else -1
            plain_word = True
            continue
        plain_word = False
        if token in ("$", "$$"):
            math = not math
        elif token == "{":
            depth += 1
        elif token == "}":
            depth = max(depth - 1, 0)
        elif token == "\\begin":
            env += 1
        elif token == "\\end":
            env = max(env - 1, 0)
        elif token in ("\\(", "\\["):
            math = True
        elif token in ("\\)", "\\]"):
            math = False
    if len(text) - start > PIECE_MAX:
        return None
    cuts.append(text[start:])
    return cuts


# Tokens pylatexenc may read per character of a piece. Ordinary text needs at most ~1.5 (the recorded
# fixtures: under 1, dense math 0.9, runs of "{" or "\\" 1.5); some unclosed
# arguments (r"\frac{\frac{...", r"\sqrt[\sqrt[...") make its tolerant parser retry exponentially
# (16 of them: seconds; 30: hours). Past the budget the piece is not LaTeX worth reading: fallback.
_TOKENS_PER_CHAR = 2


class _BoundedWalker(latexwalker.LatexWalker):  # type: ignore[misc]
    """pylatexenc's walker, reading at most _TOKENS_PER_CHAR tokens per character of its text."""

    def __init__(self, text: str, **kwargs: object) -> None:
        super().__init__(text, **kwargs)
        self._tokens_left = _TOKENS_PER_CHAR * len(text) + 50

    def get_token(self, *args: object, **kwargs: object) -> object:
        self._tokens_left -= 1
        if self._tokens_left < 0:
            raise _OverBudget
        return super().get_token(*args, **kwargs)


def _convert(piece: str) -> str:
    try:
        prepared = _prepare(piece)
        walker = _BoundedWalker(prepared, latex_context=_WALKER_DB, tolerant_parsing=True)
        nodes, _, _ = walker.get_latex_nodes()
        # A converter per call: pylatexenc keeps per-conversion state on it.
        rendered = _normalise(LatexNodes2Text(latex_context=_TEXT_DB).nodelist_to_text(nodes))
        # Spaces before a glue mark go with it. Collapsed first: a regex like \s*GLUE is quadratic on
        # long runs of whitespace (which "$$$$" or "\\\\" render to).
        return _normalise(rendered.replace(" " + _GLUE, "").replace(_GLUE, ""))
    except Exception:  # pylatexenc has many failure modes on arbitrary text (RecursionError, _OverBudget)
        return _fallback(piece)


def latex_to_text(text: str) -> str:
    """Readable Unicode for arXiv LaTeX-ish text, whitespace collapsed. Never raises: on any parser error
    the input comes back with its math `$` stripped. Linear in the length of `text`."""
    # Dollars are balanced over the whole text first, so every piece agrees on what is math.
    whole = _balance_dollars(_normalise(text.replace(_GLUE, "")))
    cut = pieces(whole)
    if cut is None:
        return _fallback(whole)
    return _normalise(" ".join(_convert(piece) for piece in cut))
