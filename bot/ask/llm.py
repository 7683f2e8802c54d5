"""The optional language model: any OpenAI-compatible chat-completions endpoint (a local Ollama, vLLM or
llama.cpp server, or a hosted one), asked once per answer within a bound. Every failure (down, slow, an
answer that is not a chat completion) is one ModelUnavailable whose message names no key and no credential:
the caller falls back to the extractive answer and says so in one line."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import httpx
from pydantic import SecretStr

from bot.config import without_credentials

log = logging.getLogger(__name__)

DEADLINE = 20.0  # seconds for one answer, connection included
MAX_REPLY_CHARS = 8000  # read of an answer: a short answer is asked for


class ModelUnavailable(Exception):
    """The model gave no usable answer; the message says why in a few words, fit to show."""


@dataclass
class ChatModel:
    http: httpx.AsyncClient
    base_url: str  # the API's base, e.g. http://127.0.0.1:11434/v1 (its /chat/completions is called)
    model: str
    api_key: SecretStr | None = None
    deadline: float = DEADLINE

    async def complete(self, system: str, user: str, *, max_tokens: int = 400) -> str:
        """The model's reply to one system and one user message; ModelUnavailable otherwise."""
        headers = {"Content-Type": "application/json"}
        if self.api_key is not None and self.api_key.get_secret_value():
            headers["Authorization"] = f"Bearer {self.api_key.get_secret_value()}"
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
            "max_tokens": max_tokens,
            "stream": False,
        }
        url = self.base_url.rstrip("/") + "/chat/completions"
        # The bound runs on the event loop's clock: a socket that trickles cannot be driven by an injected one.
        try:
            async with asyncio.timeout(self.deadline):
                response = await self.http.post(url, json=body, headers=headers)
        except TimeoutError:
            raise self._failed(f"it did not answer within {self.deadline:g} s") from None
        except httpx.HTTPError as exc:
            raise self._failed(f"it could not be reached ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise self._failed(f"it answered HTTP {response.status_code}")
        return self._content(response)

    def _content(self, response: httpx.Response) -> str:
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise self._failed("its answer was not a chat completion") from None
        if not isinstance(content, str) or not content.strip():
            raise self._failed("its answer had no text")
        return content[:MAX_REPLY_CHARS]

    def _failed(self, why: str) -> ModelUnavailable:
        log.warning("language model %s at %s: %s", self.model, without_credentials(self.base_url), why)
        return ModelUnavailable(why)
