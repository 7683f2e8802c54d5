"""Topic queries in arXiv's search syntax: parsed once, then evaluated locally, sent to FTS5 and to arXiv.

One query string has three readers, and they must agree:

* ``matches(paper)`` decides locally whether a new paper belongs to the topic;
* ``to_fts5()`` turns it into a MATCH expression that prefilters stored history, which ``matches`` then
  confirms, so it may return too much but must never drop a true match;
* ``to_arxiv()`` sends the same query to the arXiv API for backfill.

Word matching rules:

* case- and accent-insensitive, on whole words; ``-`` and spaces are interchangeable ("post-training" is the
  phrase "post training"), but a closed compound ("posttraining") is a different word, exactly as the FTS
  index sees it;
* plural tolerant: ``model``/``models``, ``policy``/``policies``, ``box``/``boxes``, ``GPU``/``GPUs``;
* a bare term means ``all:``: title, abstract or an author's name (a phrase stays within one of them);
* a trailing ``*`` is a prefix of one word (``diffus*``, ``post-train*``), inside quotes it is literal;
  ``cat:cs.*`` is a category prefix, ``id:2401.*`` an id prefix; ``id:`` ignores versions;
* ``au:`` words match within one author name, in any order, exactly (no plurals), with single letters as
  initials: ``au:"Geoffrey Hinton"``, ``au:Hinton_G`` and ``au:hinton`` all match "Geoffrey E. Hinton";
* ``NOT``/``ANDNOT`` subtract from a positive part joined by AND (``a NOT b`` = ``a ANDNOT b``); a query
  that is only a negation, or ``a OR NOT b``, is rejected: arXiv cannot run it and it would match nearly all.

Words are folded exactly as the store's FTS5 tokenizer (``bot.fts_tokenizer``) folds them: SQLite itself is
asked how it folds each non-ASCII character, once per character. A Python NFKD fold would also fold ß,
ligatures and superscripts, which FTS5 keeps, and the prefilter would then drop true matches.

The package, bottom up: ``_folding`` (text into FTS5's words), ``_plurals`` (plural tolerance), ``_stemmer``
(FTS5's Porter stemmer, for the prefilter), ``_paper_text`` (a paper's words, once per paper), ``_nodes`` and
``_terms`` (the tree and its back ends), ``_parser`` (luqum into the tree, and the syntax errors) and
``_topic_query`` (the public object). Import from this package only: the modules are private.
"""

from bot.topics.query._folding import fold_words
from bot.topics.query._nodes import Predicate
from bot.topics.query._paper_text import PaperText
from bot.topics.query._parser import MAX_QUERY_LENGTH, QuerySyntaxError
from bot.topics.query._plurals import plurals_of, word_forms
from bot.topics.query._stemmer import fts_prefix_token, porter_stem
from bot.topics.query._topic_query import TopicQuery, parse_query

__all__ = [
    "MAX_QUERY_LENGTH",
    "PaperText",
    "Predicate",
    "QuerySyntaxError",
    "TopicQuery",
    "fold_words",
    "fts_prefix_token",
    "parse_query",
    "plurals_of",
    "porter_stem",
    "word_forms",
]
