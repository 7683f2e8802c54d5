"""A loopback OpenAI-compatible chat-completions endpoint (POST /v1/chat/completions) for the tests of the
optional language model: it answers with whatever `reply` writes from the request, or fails as a real endpoint
can (down, slow, garbage), and records every request (body and headers) it was sent."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

Mode = Literal["answer", "down", "slow", "garbage", "empty"]
Reply = Callable[[dict[str, Any]], str]


@dataclass
class Recorded:
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def user_text(self) -> str:
        return "\n".join(m["content"] for m in self.body["messages"] if m["role"] == "user")

    @property
    def system_text(self) -> str:
        return "\n".join(m["content"] for m in self.body["messages"] if m["role"] == "system")


@dataclass
class FakeOpenAI:
    reply: Reply = lambda body: "NO_ANSWER"
    mode: Mode = "answer"
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None
    _closing: asyncio.Event = field(default_factory=asyncio.Event)

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
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
        """What LLM_BASE_URL names: the API's base, under which /chat/completions is."""
        return f"http://127.0.0.1:{self.port}/v1"

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(Recorded(body, dict(request.headers)))
        if self.mode == "down":
            return web.json_response({"error": {"message": "model overloaded"}}, status=503)
        if self.mode == "slow":
            await self._closing.wait()  # answers only when the test is over; the client's bound ends it first
            return web.json_response({}, status=504)
        if self.mode == "garbage":
            return web.Response(text="<html>502 Bad Gateway</html>", content_type="text/html")
        if self.mode == "empty":
            return web.json_response({"choices": []})
        content = self.reply(body)
        return web.json_response(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": body.get("model", ""),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            }
        )


def numbered_sources(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The sources the answerer sent, as the JSON list in its user message (what a grounded model reads)."""
    user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
    start = user.index("[{")
    return list(json.loads(user[start : user.rindex("}]") + 2]))
