"""Rich gRPC errors: INVALID_ARGUMENT with google.rpc.BadRequest field violations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
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


def error_status(
    code: grpc.StatusCode, message: str, violations: Sequence[FieldViolation] = ()
) -> grpc.Status:
    """A status whose field violations travel as a google.rpc.BadRequest detail."""
    bad_request = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
            for v in violations
        ]
    )
    detail = any_pb2.Any()
    detail.Pack(bad_request)
    number, _ = code.value
    status = status_pb2.Status(code=number, message=message, details=[detail])
    converted: grpc.Status = rpc_status.to_status(status)
    return converted


def invalid_argument_status(error: InvalidRequest) -> grpc.Status:
    return error_status(grpc.StatusCode.INVALID_ARGUMENT, str(error), error.violations)


async def abort(
    context: grpc.aio.ServicerContext[Any, Any],
    code: grpc.StatusCode,
    message: str,
    violations: Sequence[FieldViolation] = (),
    *,
    info: error_details_pb2.ErrorInfo | None = None,
) -> NoReturn:
    """Ends the RPC with `code`: the one way a servicer fails a call. With violations,
    they travel as a google.rpc.BadRequest detail; `info` as a google.rpc.ErrorInfo."""
    if info is not None:
        await context.abort_with_status(_info_status(code, message, info))
    if violations:
        await context.abort_with_status(error_status(code, message, violations))
    await context.abort(code, message)


async def abort_invalid(
    context: grpc.aio.ServicerContext[Any, Any], error: InvalidRequest
) -> NoReturn:
    await abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(error), error.violations)


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


def _info_status(
    code: grpc.StatusCode, message: str, info: error_details_pb2.ErrorInfo
) -> grpc.Status:
    # A machine-readable cause the caller acts on (AIP-193), e.g. which input images a
    # tool worker does not hold.
    detail = any_pb2.Any()
    detail.Pack(info)
    number, _ = code.value
    status = status_pb2.Status(code=number, message=message, details=[detail])
    converted: grpc.Status = rpc_status.to_status(status)
    return converted


def error_info(exc: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo | None:
    """The ErrorInfo an error carries (client side), if any."""
    status = rpc_status.from_call(exc)
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info
    return None
