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


class InvalidRequest(ValueError):
    """A request that fails validation; carries every violation found."""

    def __init__(self, violations: Sequence[FieldViolation]) -> None:
        self.violations = list(violations)
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
