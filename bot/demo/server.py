"""A small arXiv API on 127.0.0.1 serving the demo corpus, for the queries paperwatch sends when it polls and
backfills: categories, optionally AND a submittedDate range, sorted and paged as arXiv does.

Entries can be held back and announced later, as arXiv announces new papers once a day.
"""

from __future__ import annotations

import copy
import re
import socket
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from aiohttp import web
from lxml import etree

from bot.demo.corpus import Entry
from bot.sources.arxiv_api import ARXIV_NS, ATOM_NS, OPENSEARCH_NS

_NSMAP = {None: ATOM_NS, "arxiv": ARXIV_NS, "opensearch": OPENSEARCH_NS}
_CATEGORY = re.compile(r"cat:([A-Za-z\-]+(?:\.[A-Za-z\-]+)?)")
_RANGE = re.compile(r"submittedDate:\[(\d{12}) TO (\d{12})\]")
_ATOM = {"Content-Type": "application/atom+xml; charset=utf-8"}
MAX_RESULTS = 2000


class _BadQuery(Exception):
    pass


def _minute(text: str) -> datetime:
    return datetime.strptime(text, "%Y%m%d%H%M").replace(tzinfo=UTC)


def _element(parent: etree._Element, ns: str, tag: str, text: str) -> None:
    etree.SubElement(parent, f"{{{ns}}}{tag}").text = text


def _feed(entries: Sequence[Entry], *, total: int, start: int, per_page: int, title: str) -> bytes:
    feed = etree.Element(f"{{{ATOM_NS}}}feed", nsmap=_NSMAP)
    _element(feed, ATOM_NS, "id", "http://127.0.0.1/paperwatch-demo")
    _element(feed, ATOM_NS, "title", title)
    _element(feed, ATOM_NS, "updated", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    _element(feed, OPENSEARCH_NS, "itemsPerPage", str(per_page))
    _element(feed, OPENSEARCH_NS, "totalResults", str(total))
    _element(feed, OPENSEARCH_NS, "startIndex", str(start))
    for entry in entries:
        feed.append(copy.deepcopy(entry.element))  # appending would move it out of the corpus
    return etree.tostring(feed, xml_declaration=True, encoding="UTF-8")


def _error_feed(message: str) -> bytes:
    """arXiv's answer to a query it cannot run: one entry whose id is .../api/errors."""
    feed = etree.Element(f"{{{ATOM_NS}}}feed", nsmap=_NSMAP)
    _element(feed, OPENSEARCH_NS, "totalResults", "1")
    _element(feed, OPENSEARCH_NS, "startIndex", "0")
    _element(feed, OPENSEARCH_NS, "itemsPerPage", "1")
    entry = etree.SubElement(feed, f"{{{ATOM_NS}}}entry")
    _element(entry, ATOM_NS, "id", "http://arxiv.org/api/errors#demo")
    _element(entry, ATOM_NS, "title", "Error")
    _element(entry, ATOM_NS, "summary", message)
    return etree.tostring(feed, xml_declaration=True, encoding="UTF-8")


class LoopbackArxiv:
    """`async with LoopbackArxiv(entries, held=...) as arxiv:` serves at `arxiv.url` until the block ends."""

    def __init__(self, entries: Iterable[Entry], *, held: Iterable[str] = ()) -> None:
        self.entries = list(entries)
        self.held = set(held)  # arXiv ids not announced yet
        self.requests = 0
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/query"

    def announce(self) -> list[Entry]:
        """Release the held entries, as arXiv's daily announcement does; returns them."""
        released = [e for e in self.entries if e.paper.arxiv_id in self.held]
        self.held.clear()
        return released

    async def __aenter__(self) -> LoopbackArxiv:
        app = web.Application()
        app.router.add_get("/api/query", self._query)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))  # loopback only: nothing outside this machine can reach the demo
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _query(self, request: web.Request) -> web.Response:
        self.requests += 1
        try:
            body = self._answer(request.query)
        except _BadQuery as exc:
            return web.Response(status=400, body=_error_feed(str(exc)), headers=_ATOM)
        return web.Response(body=body, headers=_ATOM)

    def _answer(self, params: object) -> bytes:
        query = dict(params)  # type: ignore[call-overload]
        search = query.get("search_query", "")
        try:
            start = int(query.get("start", 0))
            per_page = int(query.get("max_results", 10))
        except ValueError:
            raise _BadQuery("start and max_results must be integers") from None
        if start < 0 or not 0 < per_page <= MAX_RESULTS:
            raise _BadQuery(f"max_results must be 1 to {MAX_RESULTS} and start at least 0")
        categories = set(_CATEGORY.findall(search))
        if not categories:
            raise _BadQuery("the demo arXiv answers category queries only, e.g. cat:cs.SE")
        window = _RANGE.search(search)
        low, high = (
            (_minute(window.group(1)), _minute(window.group(2)) + timedelta(minutes=1))
            if window
            else (datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC))
        )
        found = [
            e
            for e in self.entries
            if e.paper.arxiv_id not in self.held
            and categories.intersection(e.paper.categories)
            and low <= e.paper.published < high
        ]
        key = "updated" if query.get("sortBy") == "lastUpdatedDate" else "published"
        found.sort(key=lambda e: getattr(e.paper, key), reverse=query.get("sortOrder") != "ascending")
        title = f"arXiv Query: search_query={search}&start={start}&max_results={per_page}"
        page = found[start : start + per_page]
        return _feed(page, total=len(found), start=start, per_page=per_page, title=title)
