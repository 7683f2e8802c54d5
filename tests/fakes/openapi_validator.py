"""Check REST request bodies against Discord's OpenAPI spec plus the documented limits it misses.

The spec (OpenAPI 3.1, i.e. JSON Schema 2020-12) lives in the shared reference folder. Validators are built
lazily and cached per operation because resolving the 1 MB document's `$ref`s is the expensive part.

Two deliberate departures from the literal spec, both matching what Discord's API really accepts:
- `SnowflakeType` is a decimal *string* in the spec, but Discord also accepts JSON integers (discord.py
  sends attachment ids as ints), so integers >= 0 are accepted as snowflakes too.
- The limits the spec gets wrong or cannot express (content 2000, embed totals, ...) are checked by
  `limit_violations`, following the Discord docs.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry
from referencing.jsonschema import DRAFT202012

SPEC_URI = "urn:discord-openapi"
SPEC_NAME = "discord-openapi.json"

# Documented limits (https://discord.com/developers/docs/resources/message, .../channel, .../interactions).
CONTENT_MAX = 2000
EMBEDS_MAX = 10
EMBEDS_TOTAL_MAX = 6000
EMBED_TITLE_MAX = 256
EMBED_DESCRIPTION_MAX = 4096
EMBED_FIELDS_MAX = 25
EMBED_FIELD_NAME_MAX = 256
EMBED_FIELD_VALUE_MAX = 1024
EMBED_FOOTER_MAX = 2048
EMBED_AUTHOR_NAME_MAX = 256
THREAD_NAME_MAX = 100
APPLIED_TAGS_MAX = 5
AUTOCOMPLETE_CHOICES_MAX = 25

_MESSAGE_SHORT = 160


def default_spec_path() -> Path:
    """`<repo>/../shared/reference/` (as laid out in CI), else under `$PAPERWATCH_SHARED` if that is set."""
    beside_repo = Path(__file__).resolve().parents[3] / "shared" / "reference" / SPEC_NAME
    shared = os.environ.get("PAPERWATCH_SHARED")
    if beside_repo.exists() or not shared:
        return beside_repo
    for candidate in (Path(shared) / "reference" / SPEC_NAME, Path(shared) / SPEC_NAME):
        if candidate.exists():
            return candidate
    return beside_repo


@dataclass(frozen=True)
class Operation:
    """One OpenAPI operation: e.g. POST /channels/{channel_id}/messages (operationId create_message)."""

    method: str
    template: str
    operation_id: str
    pattern: re.Pattern[str]
    literal_segments: int


def _compile_template(template: str) -> tuple[re.Pattern[str], int]:
    parts = template.strip("/").split("/")
    regex = []
    literals = 0
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            regex.append(f"(?P<{part[1:-1]}>[^/]+)")
        else:
            regex.append(re.escape(part))
            literals += 1
    return re.compile("/" + "/".join(regex)), literals


def _short(text: str) -> str:
    return text if len(text) <= _MESSAGE_SHORT else text[: _MESSAGE_SHORT - 3] + "..."


class OpenAPIValidator:
    """Validates request bodies of Discord REST operations against the OpenAPI request schemas."""

    def __init__(self, spec_path: Path | None = None) -> None:
        self.spec_path = spec_path or default_spec_path()
        self._validators: dict[tuple[str, str, str], jsonschema.protocols.Validator | None] = {}

    @cached_property
    def spec(self) -> dict[str, Any]:
        spec = json.loads(self.spec_path.read_text(encoding="utf-8"))
        schemas = spec["components"]["schemas"]
        strict = copy.deepcopy(schemas["SnowflakeType"])
        schemas["SnowflakeType"] = {"anyOf": [strict, {"type": "integer", "minimum": 0}]}
        return spec

    @cached_property
    def _registry(self) -> Registry:
        return Registry().with_resource(SPEC_URI, DRAFT202012.create_resource(self.spec))

    @cached_property
    def operations(self) -> list[Operation]:
        ops = []
        for template, item in self.spec["paths"].items():
            pattern, literals = _compile_template(template)
            for method, op in item.items():
                if method == "parameters" or not isinstance(op, dict):
                    continue
                ops.append(Operation(method.upper(), template, op.get("operationId", ""), pattern, literals))
        # Literal segments win over parameters: `/messages/@original` before `/messages/{message_id}`.
        ops.sort(key=lambda o: -o.literal_segments)
        return ops

    def find_operation(self, method: str, path: str) -> Operation | None:
        """The spec operation a concrete path (without the /api/v10 prefix) belongs to."""
        for op in self.operations:
            if op.method == method.upper() and op.pattern.fullmatch(path):
                return op
        return None

    def _validator(self, op: Operation, media_type: str) -> jsonschema.protocols.Validator | None:
        key = (op.method, op.template, media_type)
        if key not in self._validators:
            body = self.spec["paths"][op.template][op.method.lower()].get("requestBody")
            content = (body or {}).get("content", {})
            if media_type not in content:
                self._validators[key] = None
            else:
                pointer = "/".join(
                    part.replace("~", "~0").replace("/", "~1")
                    for part in (
                        "paths",
                        op.template,
                        op.method.lower(),
                        "requestBody",
                        "content",
                        media_type,
                        "schema",
                    )
                )
                self._validators[key] = jsonschema.Draft202012Validator(
                    {"$ref": f"{SPEC_URI}#/{pointer}"}, registry=self._registry
                )
        return self._validators[key]

    def schema_violations(self, op: Operation, body: Any) -> list[str]:
        """Messages for every way `body` (a JSON value; multipart's payload_json) breaks the request schema."""
        spec_op = self.spec["paths"][op.template][op.method.lower()]
        request_body = spec_op.get("requestBody")
        if request_body is None:
            return [] if body is None else [f"{op.operation_id}: the operation takes no request body"]
        if body is None:
            required = request_body.get("required", False)
            return [f"{op.operation_id}: a request body is required"] if required else []
        validator = self._validator(op, "application/json")
        if validator is None:
            return []
        return [
            f"{op.operation_id}: {line}" for err in validator.iter_errors(body) for line in _describe(err)
        ]


def _describe(err: ValidationError) -> list[str]:
    """Readable lines for one error; for unions, the errors of the branch the body was meant to match."""
    if err.context:
        branch = _intended_branch(err.context)
        if branch:
            return [line for sub in branch for line in _describe(sub)]
        return _describe(best_match(err.context))
    return [f"{err.json_path}: {_message(err)}"]


def _message(err: ValidationError) -> str:
    if len(repr(err.instance)) <= 60:
        return _short(err.message)
    size = f" (length {len(err.instance)})" if isinstance(err.instance, str | list | dict) else ""
    return f"fails {err.validator}={err.validator_value!r}{size}"


def _is_wrong_branch(err: ValidationError) -> bool:
    """An error that only says 'this is another union member': wrong JSON type or wrong `type` tag."""
    path = list(err.relative_path)
    return (not path and err.validator == "type") or (path == ["type"] and err.validator in ("enum", "const"))


def _intended_branch(context: list[ValidationError]) -> list[ValidationError]:
    """Errors of the union branch with the fewest leaf errors among those not ruled out by a type/tag
    mismatch (counting leaves, so nested unions compare fairly)."""
    branches: dict[Any, list[ValidationError]] = {}
    for sub in context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    plausible = [errs for errs in branches.values() if not any(_is_wrong_branch(e) for e in errs)]
    return min(plausible, key=lambda errs: sum(len(_describe(e)) for e in errs)) if plausible else []


# ----------------------------------------------------------------------------------------------------------
# Documented limits


def _text_len(value: Any) -> int:
    return len(value) if isinstance(value, str) else 0


def _embed_violations(embed: dict[str, Any], where: str) -> Iterator[str]:
    checks = [
        ("title", _text_len(embed.get("title")), EMBED_TITLE_MAX),
        ("description", _text_len(embed.get("description")), EMBED_DESCRIPTION_MAX),
        ("footer.text", _text_len((embed.get("footer") or {}).get("text")), EMBED_FOOTER_MAX),
        ("author.name", _text_len((embed.get("author") or {}).get("name")), EMBED_AUTHOR_NAME_MAX),
    ]
    fields = embed.get("fields") or []
    if len(fields) > EMBED_FIELDS_MAX:
        yield f"{where}.fields: {len(fields)} fields > {EMBED_FIELDS_MAX}"
    for i, field in enumerate(fields):
        checks.append((f"fields[{i}].name", _text_len(field.get("name")), EMBED_FIELD_NAME_MAX))
        checks.append((f"fields[{i}].value", _text_len(field.get("value")), EMBED_FIELD_VALUE_MAX))
    for name, length, limit in checks:
        if length > limit:
            yield f"{where}.{name}: {length} characters > {limit}"


def embed_characters(embed: dict[str, Any]) -> int:
    """Characters that count towards the 6000 per-message total (title, description, fields, footer, author)."""
    total = _text_len(embed.get("title")) + _text_len(embed.get("description"))
    total += _text_len((embed.get("footer") or {}).get("text"))
    total += _text_len((embed.get("author") or {}).get("name"))
    for field in embed.get("fields") or []:
        total += _text_len(field.get("name")) + _text_len(field.get("value"))
    return total


def message_limit_violations(message: dict[str, Any] | None, where: str = "$") -> list[str]:
    """Documented limits of one message body (channel message, interaction reply, follow-up, forum starter)."""
    if not isinstance(message, dict):
        return []
    found: list[str] = []
    content_len = _text_len(message.get("content"))
    if content_len > CONTENT_MAX:
        found.append(f"{where}.content: {content_len} characters > {CONTENT_MAX}")
    embeds = [e for e in message.get("embeds") or [] if isinstance(e, dict)]
    if len(embeds) > EMBEDS_MAX:
        found.append(f"{where}.embeds: {len(embeds)} embeds > {EMBEDS_MAX}")
    for i, embed in enumerate(embeds):
        found.extend(_embed_violations(embed, f"{where}.embeds[{i}]"))
    total = sum(embed_characters(e) for e in embeds)
    if total > EMBEDS_TOTAL_MAX:
        found.append(f"{where}.embeds: {total} characters in all embeds > {EMBEDS_TOTAL_MAX}")
    return found


def _thread_violations(body: dict[str, Any]) -> Iterator[str]:
    name_len = _text_len(body.get("name"))
    if name_len > THREAD_NAME_MAX:
        yield f"$.name: thread name {name_len} characters > {THREAD_NAME_MAX}"
    tags = body.get("applied_tags") or []
    if len(tags) > APPLIED_TAGS_MAX:
        yield f"$.applied_tags: {len(tags)} tags > {APPLIED_TAGS_MAX}"
    yield from message_limit_violations(body.get("message"), "$.message")


def _callback_violations(body: dict[str, Any]) -> Iterator[str]:
    data = body.get("data")
    if body.get("type") == 8:
        choices = (data or {}).get("choices") or []
        if len(choices) > AUTOCOMPLETE_CHOICES_MAX:
            yield f"$.data.choices: {len(choices)} choices > {AUTOCOMPLETE_CHOICES_MAX}"
    elif body.get("type") in (4, 7):
        yield from message_limit_violations(data, "$.data")


_MESSAGE_BODIES = {
    "create_message",
    "execute_webhook",
    "update_original_webhook_message",
    "update_webhook_message",
    "update_message",
}


def limit_violations(operation_id: str, body: Any) -> list[str]:
    """Documented limits for the operations the fake serves; other operations have none checked here."""
    if not isinstance(body, dict):
        return []
    found: Iterable[str] = []
    if operation_id in _MESSAGE_BODIES:
        found = message_limit_violations(body)
    elif operation_id == "create_thread":
        found = _thread_violations(body)
    elif operation_id == "create_interaction_response":
        found = _callback_violations(body)
    return [f"{operation_id}: {text}" for text in found]
