"""Domain errors. Each carries a message fit to show a user: what went wrong and what to do."""

from __future__ import annotations


class PaperwatchError(Exception):
    """Base for errors whose message can be shown to a user as is."""


class ConfigError(PaperwatchError):
    """A setting is missing or invalid."""


class SourceError(PaperwatchError):
    """A source could not be read this cycle (after retries). Nothing was stored from the failed page."""


class ArxivQueryError(SourceError):
    """arXiv rejected a query (HTTP 400 or an Atom error entry). Retrying the same query will not help."""

    def __init__(self, query: str, detail: str) -> None:
        self.query = query
        self.detail = detail
        super().__init__(f"arXiv rejected the query {query!r}: {detail}")


class ArxivUnavailable(SourceError):
    """arXiv did not answer well after every retry (429, 5xx, timeouts, broken pages)."""


class MalformedFeed(SourceError):
    """A response could not be parsed as the feed it claims to be (truncated, not XML, unsafe)."""


class Unreachable(PaperwatchError):
    """A service (Discord, arXiv) could not be reached or gave no usable answer; the message names it, what
    to check, and what to do next. Nothing was lost."""


class ReadTimedOut(PaperwatchError):
    """A store read given a deadline (a search's time budget) was stopped when it passed: the connection is
    free again at once. Callers answer with what they can give cheaply instead."""

    def __init__(self) -> None:
        super().__init__("The stored papers took too long to search for this query. Narrow it and try again.")
