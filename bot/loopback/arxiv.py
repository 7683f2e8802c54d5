"""A loopback arXiv: a fake of arXiv's API and RSS endpoints, with faults switchable at any time.

    async with LoopbackArxiv(papers) as fa:
        fa.fail_next(503)                  # the next API request gets a 503
        client = ArxivClient(http, fa.url)

The API endpoint answers exactly the queries paperwatch sends: `cat:X` or `(cat:X OR cat:Y ...)`, optionally
AND-ed with `submittedDate:[YYYYMMDDHHMM TO YYYYMMDDHHMM]`, sorted by submittedDate or lastUpdatedDate, paged
with start/max_results; or `id_list`. Anything else gets arXiv's 400 error feed, unless a `query_filter`
passed to the constructor understands it. Faults queue per endpoint ("api" or "rss") and are consumed one per
request in the order they were added.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import re
import socket
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal
from xml.sax.saxutils import escape
from zoneinfo import ZoneInfo

from aiohttp import web

from bot.loopback.atom import RawEntry, atom_feed, error_feed
from bot.models import Paper, split_arxiv_id

Endpoint = Literal["api", "rss"]
QueryFilter = Callable[[str], Callable[[Paper], bool] | None]
Item = Paper | RawEntry  # what the fake holds: papers, and entries served exactly as written
_NEWEST = datetime.max.replace(tzinfo=UTC)  # where a RawEntry without a date sorts

_CAT = re.compile(r"cat:([A-Za-z\-]+(?:\.[A-Za-z\-]+)?)")
_DATE_RANGE = re.compile(r"submittedDate:\[(\d{12}) TO (\d{12})\]")
_DATE_RANGE_PART = re.compile(r"\s+AND\s+submittedDate:\[\d{12} TO \d{12}\]")
_SORT_KEYS: dict[str, Callable[[Paper], tuple[datetime, str]]] = {
    "submittedDate": lambda p: (p.published, p.arxiv_id),
    "lastUpdatedDate": lambda p: (p.updated, p.arxiv_id),
}
_RAW_SORT_KEY: Callable[[RawEntry], tuple[datetime, str]] = lambda e: (e.published or _NEWEST, "")  # noqa: E731
MAX_RESULTS = 2000


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    endpoint: Endpoint
    path: str
    params: dict[str, str]
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Fault:
    kind: Literal["status", "empty", "truncate", "delay", "reset", "raw", "trickle", "redirect"]
    status: int = 200
    retry_after: str | None = None
    seconds: float = 0.0
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class _Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _RssDoc:
    body: bytes
    etag: str
    last_modified: datetime | None


class _BadQuery(Exception):
    pass


def _minute(text: str) -> datetime:
    return datetime.strptime(text, "%Y%m%d%H%M").replace(tzinfo=UTC)


def _categories(part: str) -> set[str] | None:
    """`cat:X` or `(cat:X OR cat:Y ...)` -> {X, Y}; None when the part is something else."""
    grouped = part.startswith("(") and part.endswith(")")
    inner = part[1:-1].strip() if grouped else part
    terms = re.split(r"\s+OR\s+", inner)
    if len(terms) > 1 and not grouped:
        return None  # several categories must be parenthesised, as category_query writes them
    matches = [_CAT.fullmatch(term.strip()) for term in terms]
    if not all(matches):
        return None
    return {m.group(1) for m in matches if m}


def _builtin_predicate(query: str) -> Callable[[Item], bool]:
    """The filter for the query shapes paperwatch sends; raises _BadQuery for anything else."""
    cats: set[str] | None = None
    window: tuple[datetime, datetime] | None = None
    parts = [p.strip() for p in re.split(r"\s+AND\s+", query.strip())]
    if len(parts) > 2:
        raise _BadQuery(f"unsupported query {query!r}")
    for part in parts:
        date = _DATE_RANGE.fullmatch(part)
        if date and window is None:
            window = (_minute(date.group(1)), _minute(date.group(2)) + timedelta(minutes=1))
        elif cats is None and (found := _categories(part)) is not None:
            cats = found
        else:
            raise _BadQuery(f"unsupported query {query!r}")
    if cats is None:
        raise _BadQuery(f"query {query!r} names no category")
    chosen, bounds = cats, window

    def matches(paper: Item) -> bool:
        if not chosen.intersection(paper.categories):
            return False
        if paper.published is None:  # a RawEntry that every date range holds
            return True
        return bounds is None or bounds[0] <= paper.published < bounds[1]

    return matches


def _etag_matches(header: str, etag: str) -> bool:
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    return "*" in tags or etag.removeprefix("W/") in tags


class LoopbackArxiv:
    """arXiv on 127.0.0.1: `url` is the API query URL, `rss_url` the RSS base (append `/<cats>`)."""

    def __init__(self, papers: Iterable[Item] = (), *, query_filter: QueryFilter | None = None) -> None:
        self.papers: list[Item] = list(papers)
        self.requests: list[RecordedRequest] = []
        self.query_filter = query_filter
        # Called with each request before it is answered; tests use it to queue faults at a chosen moment.
        self.on_request: Callable[[RecordedRequest], None] | None = None
        # Serve as if submittedDate were not part of the query (arXiv has ignored query parts before).
        self.ignore_date_range = False
        self._faults: dict[Endpoint, deque[_Fault]] = {"api": deque(), "rss": deque()}
        self._rss: dict[str, _RssDoc] = {}
        self._changed = asyncio.Condition()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------------------

    async def __aenter__(self) -> LoopbackArxiv:
        app = web.Application()
        app.router.add_get("/api/query", self._api)
        app.router.add_get("/rss/{cats}", self._rss_handler)
        # handler_cancellation: a client that gave up (timeout) cancels its delayed handler.
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/api/query"

    @property
    def rss_url(self) -> str:
        return f"{self.base_url}/rss"

    # -- faults -----------------------------------------------------------------------------------------

    def fail_next(
        self, status: int, count: int = 1, retry_after: str | None = None, *, endpoint: Endpoint = "api"
    ) -> None:
        """Answer the next `count` requests with `status` (400 carries arXiv's error feed)."""
        self._queue(endpoint, _Fault("status", status=status, retry_after=retry_after), count)

    def empty_next(self, count: int = 1) -> None:
        """200 pages with zero entries but the true totalResults (arXiv's known fault)."""
        self._queue("api", _Fault("empty"), count)

    def truncate_next(self, count: int = 1, *, endpoint: Endpoint = "api") -> None:
        """A complete HTTP response whose body is the first half of the real document."""
        self._queue(endpoint, _Fault("truncate"), count)

    def delay_next(self, seconds: float, count: int = 1, *, endpoint: Endpoint = "api") -> None:
        """Wait `seconds` of real time before answering normally (to trip client timeouts)."""
        self._queue(endpoint, _Fault("delay", seconds=seconds), count)

    def reset_next(self, count: int = 1, *, endpoint: Endpoint = "api") -> None:
        """Send the headers and half the body, then drop the connection."""
        self._queue(endpoint, _Fault("reset"), count)

    def serve_raw_next(
        self,
        body: bytes,
        status: int = 200,
        count: int = 1,
        *,
        headers: dict[str, str] | None = None,
        endpoint: Endpoint = "api",
    ) -> None:
        """Answer with these exact bytes (a recorded fixture, a hostile document, an HTML error page).
        `headers` replace the default Atom Content-Type (e.g. to claim a gzip encoding)."""
        chosen = headers if headers is not None else {"Content-Type": "application/atom+xml; charset=utf-8"}
        self._queue(endpoint, _Fault("raw", status=status, body=body, headers=tuple(chosen.items())), count)

    def trickle_next(
        self, count: int = 1, *, interval: float = 0.05, body: bytes | None = None, endpoint: Endpoint = "api"
    ) -> None:
        """Answer 200 with headers at once, then one byte of the body (the real answer unless given) every
        `interval` seconds of real time: each read is quick, the whole answer takes minutes."""
        self._queue(endpoint, _Fault("trickle", seconds=interval, body=body or b""), count)

    def redirect_next(self, count: int = 1, *, endpoint: Endpoint = "api") -> None:
        """Answer 302 to the very URL asked: queued often enough, a redirect loop."""
        self._queue(endpoint, _Fault("redirect", status=302), count)

    def pending_faults(self, endpoint: Endpoint = "api") -> int:
        return len(self._faults[endpoint])

    def clear_faults(self, endpoint: Endpoint = "api") -> None:
        self._faults[endpoint].clear()

    def _queue(self, endpoint: Endpoint, fault: _Fault, count: int) -> None:
        self._faults[endpoint].extend([fault] * count)

    # -- RSS --------------------------------------------------------------------------------------------

    def set_rss(
        self,
        body: bytes,
        *,
        cats: str = "*",
        etag: str | None = None,
        last_modified: datetime | None = None,
    ) -> None:
        """Serve `body` at /rss/<cats> ("*": any cats without a body of their own). The ETag defaults to a
        hash of the body; Last-Modified is sent only when given."""
        tag = etag or f'"{hashlib.sha256(body).hexdigest()[:16]}"'
        self._rss[cats] = _RssDoc(body, tag, last_modified)

    # -- observation ------------------------------------------------------------------------------------

    # A plain timeout argument (the brief's API) keeps test call sites short.
    async def wait_for_requests(
        self,
        n: int,
        timeout: float = 10.0,  # noqa: ASYNC109
        *,
        endpoint: Endpoint | None = None,
    ) -> list[RecordedRequest]:
        """Wait (event-driven, no polling) until at least `n` requests (of `endpoint`, if given) arrived."""

        def seen() -> list[RecordedRequest]:
            return [r for r in self.requests if endpoint is None or r.endpoint == endpoint]

        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: len(seen()) >= n)
        except TimeoutError:
            raise TimeoutError(
                f"LoopbackArxiv saw {len(seen())} of {n} expected requests in {timeout} s"
            ) from None
        return seen()

    async def _record(self, request: web.Request, endpoint: Endpoint) -> None:
        recorded = RecordedRequest(endpoint, request.path, dict(request.query), dict(request.headers))
        self.requests.append(recorded)
        if self.on_request is not None:
            self.on_request(recorded)
        async with self._changed:
            self._changed.notify_all()

    # -- handlers ---------------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        await self._record(request, "api")
        return await self._serve(request, "api", self._query_reply)

    async def _rss_handler(self, request: web.Request) -> web.StreamResponse:
        await self._record(request, "rss")
        return await self._serve(request, "rss", self._rss_reply)

    async def _serve(
        self, request: web.Request, endpoint: Endpoint, normal: Callable[[web.Request, bool], _Reply]
    ) -> web.StreamResponse:
        queue = self._faults[endpoint]
        fault = queue.popleft() if queue else None
        if fault is not None and fault.kind == "delay":
            with contextlib.suppress(TimeoutError):  # closing the fake cuts the delay short
                await asyncio.wait_for(self._closing.wait(), fault.seconds)
            fault = None
        if fault is not None and fault.kind == "redirect":
            return web.Response(status=302, headers={"Location": str(request.rel_url)})
        if fault is not None and fault.kind == "status":
            reply = _fault_reply(fault)
        elif fault is not None and fault.kind == "raw":
            reply = _Reply(fault.status, fault.body, dict(fault.headers))
        else:
            reply = normal(request, fault is not None and fault.kind == "empty")
        if fault is not None and fault.kind == "truncate":
            reply.body = reply.body[: len(reply.body) // 2]
        if fault is not None and fault.kind == "reset":
            return await _reset(request, reply)
        if fault is not None and fault.kind == "trickle":
            return await self._trickle(request, reply, fault)
        return web.Response(status=reply.status, body=reply.body, headers=reply.headers)

    async def _trickle(self, request: web.Request, reply: _Reply, fault: _Fault) -> web.StreamResponse:
        body = fault.body or reply.body
        response = web.StreamResponse(status=reply.status, headers=reply.headers)
        response.content_length = len(body)
        await response.prepare(request)
        for i in range(len(body)):
            await response.write(body[i : i + 1])
            with contextlib.suppress(TimeoutError):  # closing the fake ends the trickle
                await asyncio.wait_for(self._closing.wait(), fault.seconds)
            if self._closing.is_set():
                break
        return response

    def _query_reply(self, request: web.Request, empty: bool) -> _Reply:
        try:
            return self._answer(dict(request.query), empty)
        except _BadQuery as exc:
            return _Reply(400, error_feed(str(exc)), {"Content-Type": "application/atom+xml; charset=utf-8"})

    def _answer(self, params: dict[str, str], empty: bool) -> _Reply:
        start = _int_param(params, "start", 0)
        max_results = _int_param(params, "max_results", 10)
        if max_results > MAX_RESULTS:
            raise _BadQuery(f"max_results must be at most {MAX_RESULTS}")
        search, ids = params.get("search_query", ""), params.get("id_list", "")
        if ids and search:
            raise _BadQuery("search_query together with id_list is not supported by the fake")
        if ids:
            matching = self._by_ids(ids)
        elif search:
            if self.ignore_date_range:
                search = _DATE_RANGE_PART.sub("", search)
            matching = [p for p in self.papers if self._predicate(search)(p)]
        else:
            raise _BadQuery("give search_query or id_list")
        matching = _sorted(matching, params.get("sortBy"), params.get("sortOrder", "descending"))
        page = [] if empty else matching[start : start + max_results]
        title = f"arXiv Query: search_query={search}&id_list={ids}&start={start}&max_results={max_results}"
        body = atom_feed(page, total=len(matching), start=start, title=title, items_per_page=max_results)
        return _Reply(200, body, {"Content-Type": "application/atom+xml; charset=utf-8"})

    def _predicate(self, search: str) -> Callable[[Item], bool]:
        try:
            return _builtin_predicate(search)
        except _BadQuery:
            custom = self.query_filter(search) if self.query_filter else None
            if custom is None:
                raise
            chosen = custom
            return lambda item: isinstance(item, RawEntry) or chosen(item)

    def _by_ids(self, ids: str) -> list[Item]:
        by_base = {p.arxiv_id: p for p in self.papers if isinstance(p, Paper)}
        found: list[Item] = []
        for raw in ids.split(","):
            try:
                base, _version = split_arxiv_id(raw)
            except ValueError:
                raise _BadQuery(f"incorrect id format for {raw}") from None
            if base in by_base:
                found.append(by_base[base])
        return found

    def _rss_reply(self, request: web.Request, empty: bool) -> _Reply:
        doc = self._rss.get(request.match_info["cats"]) or self._rss.get("*")
        if doc is None:
            return _Reply(404, b"no such feed", {"Content-Type": "text/plain"})
        headers = {"ETag": doc.etag, "Content-Type": "application/rss+xml; charset=utf-8"}
        if doc.last_modified is not None:
            headers["Last-Modified"] = email.utils.format_datetime(
                doc.last_modified.astimezone(UTC), usegmt=True
            )
        if _not_modified(request, doc):
            return _Reply(304, b"", headers)
        return _Reply(200, doc.body, headers)


def rss_feed(
    items: Iterable[tuple[Paper, str]], *, announced: datetime, built: datetime | None = None
) -> bytes:
    """An arXiv RSS announcement feed as rss.arxiv.org writes it: one item per (paper, announce type), every
    item's pubDate the announcement day's midnight US Eastern (`announced` gives the day), the channel's
    lastBuildDate `built` (default: that midnight too)."""
    midnight = datetime(announced.year, announced.month, announced.day, tzinfo=ZoneInfo("America/New_York"))
    pub = email.utils.format_datetime(midnight)
    build = email.utils.format_datetime((built or midnight).astimezone(UTC))
    body = []
    for paper, kind in items:
        categories = "".join(f"<category>{escape(c)}</category>" for c in paper.categories)
        creator = escape(", ".join(a.name for a in paper.authors))
        body.append(
            f"<item><title>{escape(paper.title)}</title><link>{paper.abs_url}</link>"
            f"<description>arXiv:{paper.versioned_id} Announce Type: {kind} \nAbstract: "
            f"{escape(paper.abstract)}</description>"
            f'<guid isPermaLink="false">oai:arXiv.org:{paper.versioned_id}</guid>{categories}'
            f"<pubDate>{pub}</pubDate><arxiv:announce_type>{kind}</arxiv:announce_type>"
            f"<dc:rights>http://arxiv.org/licenses/nonexclusive-distrib/1.0/</dc:rights>"
            f"<dc:creator>{creator}</dc:creator></item>"
        )
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<rss xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'version="2.0"><channel><title>arXiv updates</title><link>http://rss.arxiv.org/rss/</link>'
        f"<description>updates on arXiv.org</description><lastBuildDate>{build}</lastBuildDate>"
        f"<pubDate>{pub}</pubDate>{''.join(body)}</channel></rss>"
    ).encode()


def _not_modified(request: web.Request, doc: _RssDoc) -> bool:
    """RFC 9110: If-None-Match decides when present; otherwise If-Modified-Since against Last-Modified."""
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None:
        return _etag_matches(if_none_match, doc.etag)
    since = request.headers.get("If-Modified-Since")
    if since is None or doc.last_modified is None:
        return False
    try:
        when = email.utils.parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return doc.last_modified.replace(microsecond=0) <= when


def _int_param(params: dict[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    if not raw.isdigit():
        raise _BadQuery(f"{name} must be a non-negative integer, got {raw!r}")
    return int(raw)


def _sorted(papers: list[Item], sort_by: str | None, order: str) -> list[Item]:
    if sort_by is None or sort_by == "relevance":
        return papers  # corpus order stands in for relevance
    if sort_by not in _SORT_KEYS or order not in ("ascending", "descending"):
        raise _BadQuery(f"unsupported sort {sort_by!r} {order!r}")
    paper_key = _SORT_KEYS[sort_by]

    def key(item: Item) -> tuple[datetime, str]:
        return _RAW_SORT_KEY(item) if isinstance(item, RawEntry) else paper_key(item)

    return sorted(papers, key=key, reverse=order == "descending")


def _fault_reply(fault: _Fault) -> _Reply:
    if fault.status == 400:
        body = error_feed("malformed query (fault injected by LoopbackArxiv)")
        headers = {"Content-Type": "application/atom+xml; charset=utf-8"}
    else:
        body = f"HTTP {fault.status} (fault injected by LoopbackArxiv)".encode()
        headers = {"Content-Type": "text/plain; charset=utf-8"}
    if fault.retry_after is not None:
        headers["Retry-After"] = fault.retry_after
    return _Reply(fault.status, body, headers)


async def _reset(request: web.Request, reply: _Reply) -> web.StreamResponse:
    """Promise the whole body, send half of it, then abort the TCP connection."""
    response = web.StreamResponse(status=reply.status, headers=reply.headers)
    response.content_length = len(reply.body)
    await response.prepare(request)
    await response.write(reply.body[: len(reply.body) // 2])
    if request.transport is not None:
        request.transport.abort()
    return response
