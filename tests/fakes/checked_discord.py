"""The loopback Discord as the tests run it: every request checked against Discord's OpenAPI spec and the
documented limits it misses, so a body Discord would refuse fails the test that sent it."""

from __future__ import annotations

from typing import Any

from bot.loopback.discord import LoopbackDiscord, RecordedRequest, RequestCheck
from tests.fakes.openapi_validator import OpenAPIValidator, limit_violations

_VALIDATOR: OpenAPIValidator | None = None


def shared_validator() -> OpenAPIValidator:
    """One validator per process: its per-operation cache then serves every FakeDiscord."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = OpenAPIValidator()
    return _VALIDATOR


def openapi_check(validator: OpenAPIValidator) -> RequestCheck:
    def check(record: RecordedRequest) -> list[str]:
        op = validator.find_operation(record.method, record.path)
        if op is None:
            return []
        record.operation = op.operation_id
        return validator.schema_violations(op, record.json) + limit_violations(op.operation_id, record.json)

    return check


class FakeDiscord(LoopbackDiscord):
    def __init__(self, *, validator: OpenAPIValidator | None = None, **options: Any) -> None:
        super().__init__(check=openapi_check(validator or shared_validator()), **options)
