"""Rich gRPC errors: INVALID_ARGUMENT with google.rpc.BadRequest field violations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status


@dataclass(frozen=True, slots=True)
class FieldViolation:
    field: str
    description: str


MAX_VIOLATIONS = 20
MAX_DETAIL_CHARS = 200


def clip(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """Errors travel in gRPC trailers (a few KB at most) and echo user input: bound them."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


class InvalidRequest(ValueError):
    """A request that fails validation; carries the violations found (at most 20)."""

    def __init__(self, violations: Sequence[FieldViolation]) -> None:
        kept = [
            FieldViolation(clip(v.field, 100), clip(v.description))
            for v in violations[:MAX_VIOLATIONS]
        ]
        if len(violations) > MAX_VIOLATIONS:
            more = len(violations) - MAX_VIOLATIONS
            kept.append(FieldViolation("request", f"and {more} more violations"))
        self.violations = kept
        super().__init__("; ".join(f"{v.field}: {v.description}" for v in self.violations))


def invalid_argument_status(error: InvalidRequest) -> grpc.Status:
    bad_request = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
            for v in error.violations
        ]
    )
    detail = any_pb2.Any()
    detail.Pack(bad_request)
    status = status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=str(error), details=[detail])
    converted: grpc.Status = rpc_status.to_status(status)
    return converted


async def abort_invalid(
    context: grpc.aio.ServicerContext[object, object], error: InvalidRequest
) -> NoReturn:
    await context.abort_with_status(invalid_argument_status(error))
    raise AssertionError("abort_with_status returned")  # it always raises


def bad_request_violations(exc: grpc.aio.AioRpcError) -> list[FieldViolation]:
    """The field violations carried by an INVALID_ARGUMENT error (client side)."""
    status = rpc_status.from_call(exc)
    if status is None:
        return []
    out: list[FieldViolation] = []
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        if detail.Unpack(bad_request):
            out.extend(FieldViolation(v.field, v.description) for v in bad_request.field_violations)
    return out
