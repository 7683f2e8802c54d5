"""The loopback Discord's REST plumbing: routing, bodies, checks, faults and rate limits."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import time
from typing import Any

from aiohttp import BodyPartReader, web

from bot.loopback.discord.gateway import Gateway
from bot.loopback.discord.records import (
    API_PREFIX,
    ATTACHMENT_SIZE_LIMIT,
    ApiError,
    RecordedFile,
    RecordedRequest,
    _Bucket,
    _Ctx,
    _Fault,
    _json_response,
    _Route,
)


class Rest(Gateway):
    # ---- REST plumbing -----------------------------------------------------------------------------------

    async def _read_body(self, request: web.Request, record: RecordedRequest) -> dict[int, RecordedFile]:
        files: dict[int, RecordedFile] = {}
        if request.content_type == "multipart/form-data":
            reader = await request.multipart()
            async for part in reader:
                if not isinstance(part, BodyPartReader):  # nested multipart: not something Discord takes
                    continue
                name = part.name or ""
                if name == "payload_json":
                    record.json = json.loads(await part.text())
                elif m := re.fullmatch(r"files\[(\d+)\]", name):
                    data = bytes(await part.read(decode=False))
                    rec = RecordedFile(name, part.filename or name, part.headers.get("Content-Type"), data)
                    files[int(m.group(1))] = rec
                    record.files.append(rec)
                else:
                    self.violations.append(
                        f"{record.method} {record.path}: unexpected multipart field {name!r}"
                    )
        elif request.can_read_body:
            raw = await request.read()
            if raw:
                if request.content_type != "application/json":
                    self.violations.append(
                        f"{record.method} {record.path}: body sent as {request.content_type}"
                    )
                record.json = json.loads(raw)
        return files

    def _match(self, method: str, path: str) -> tuple[_Route, dict[str, str]] | None:
        for route in self._routes:
            if route.method == method and (m := route.pattern.fullmatch(path)):
                return route, m.groupdict()
        return None

    async def _handle_rest(self, request: web.Request) -> web.StreamResponse:
        raw_path = request.path
        path = raw_path[len(API_PREFIX) :] if raw_path.startswith(API_PREFIX + "/") else raw_path
        headers = {k: v for k, v in request.headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = "<present>" if "Authorization" in request.headers else "<absent>"
        record = RecordedRequest(request.method, path, dict(request.query), None, [], headers)
        self.requests.append(record)
        try:
            files = await self._read_body(request, record)
            response = await self._process(request, record, files, raw_path)
        except ApiError as err:
            response = self._api_error(record, err)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            response = self._api_error(
                record,
                ApiError(
                    400,
                    50109,
                    "The request body contains invalid JSON.",
                    f"{record.method} {path}: invalid JSON body ({err})",
                ),
            )
        except Exception as err:  # a bug in the fake: fail the test fast instead of a 500 the client retries
            response = self._api_error(
                record, ApiError(400, 0, "fake discord error", f"{record.method} {path}: fake raised {err!r}")
            )
        record.status = response.status
        self._notify()
        return response

    def _api_error(self, record: RecordedRequest, err: ApiError) -> web.Response:
        if err.violation:
            self.violations.append(err.violation)
        body: dict[str, Any] = {"message": err.message, "code": err.code}
        if err.status == 400 and err.code == 50035:
            body["errors"] = {}
        return _json_response(err.status, body)

    async def _process(
        self, request: web.Request, record: RecordedRequest, files: dict[int, RecordedFile], raw_path: str
    ) -> web.StreamResponse:
        matched = self._match(record.method, record.path) if raw_path.startswith(API_PREFIX + "/") else None
        if matched is None:
            raise ApiError(404, 0, "404: Not Found", f"unknown route {record.method} {raw_path}")
        route, params = matched
        if route.bot_auth and request.headers.get("Authorization") != f"Bot {self.token}":
            raise ApiError(401, 0, "401: Unauthorized")
        limited = self._global_limit() if route.bot_auth else None
        if limited is not None:
            return limited
        ctx = _Ctx(request, record, params, record.json, files)
        fault = self._take_fault(record)
        if fault is not None and not fault.applied:
            return self._fault_response(fault)
        rl_headers: dict[str, str] = {}
        if "channel_id" in params and self._per_channel_limit is not None:
            limited, rl_headers = self._channel_limit(route.template, params["channel_id"])
            if limited is not None:
                return limited
        self._validate(record, files)
        response = await route.handler(ctx)
        if fault is not None:
            return self._fault_response(fault)
        response.headers.update(rl_headers)
        return response

    def _validate(self, record: RecordedRequest, files: dict[int, RecordedFile]) -> None:
        found = self.check(record) if self.check is not None else []
        found += [
            f"{record.method} {record.path}: {f.field} is {len(f.data)} bytes > {ATTACHMENT_SIZE_LIMIT}"
            for f in files.values()
            if len(f.data) > ATTACHMENT_SIZE_LIMIT
        ]
        if found:
            self.violations.extend(found)
            raise ApiError(400, 50035, "Invalid Form Body")

    def _take_fault(self, record: RecordedRequest) -> _Fault | None:
        for fault in self._faults:
            if fault.method not in (None, record.method) or not fault.pattern.fullmatch(record.path):
                continue
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.remove(fault)
            return fault
        return None

    def _fault_response(self, fault: _Fault) -> web.Response:
        if fault.status == 429:
            return self._rate_limited(fault.retry_after, global_=fault.global_)
        bodies = {
            401: {"message": "401: Unauthorized", "code": 0},
            403: {"message": "Missing Access", "code": 50001},
            404: {"message": "Unknown Channel", "code": 10003},
        }
        body = bodies.get(fault.status) or (
            {"message": "Internal Server Error", "code": 0}
            if fault.status >= 500
            else {"message": "Invalid Form Body", "code": 50035, "errors": {}}
        )
        return _json_response(fault.status, body)

    def _rate_limited(
        self, retry_after: float, *, global_: bool, extra: dict[str, str] | None = None
    ) -> web.Response:
        headers = {
            "Via": "1.1 google",
            "Retry-After": str(math.ceil(retry_after)),
            "X-RateLimit-Scope": "global" if global_ else "user",
            **(extra or {}),
        }
        if global_:
            headers["X-RateLimit-Global"] = "true"
        body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": global_}
        return _json_response(429, body, headers)

    def _global_limit(self) -> web.Response | None:
        if self._global_per_second is None:
            return None
        now = asyncio.get_running_loop().time()
        window = self._global_window
        if now >= window.reset_at:
            window.count, window.reset_at = 0, now + 1.0
        window.count += 1
        if window.count > self._global_per_second:
            return self._rate_limited(round(window.reset_at - now, 3), global_=True)
        return None

    def _channel_limit(self, template: str, channel_id: str) -> tuple[web.Response | None, dict[str, str]]:
        assert self._per_channel_limit is not None
        limit, period = self._per_channel_limit
        now = asyncio.get_running_loop().time()
        bucket = self._buckets.setdefault((template, channel_id), _Bucket(0, now + period))
        if now >= bucket.reset_at:
            bucket.count, bucket.reset_at = 0, now + period
        bucket.count += 1
        reset_after = max(bucket.reset_at - now, 0.0)
        headers = {
            "X-RateLimit-Bucket": hashlib.sha1(template.encode()).hexdigest()[:16],
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(limit - bucket.count, 0)),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        }
        if bucket.count > limit:
            return self._rate_limited(round(reset_after, 3), global_=False, extra=headers), headers
        return None, headers
