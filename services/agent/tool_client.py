"""The agent's client of the tool service (gRPC), behind the ToolExecutor protocol.

One channel for all calls, balanced round-robin over every address the target
resolves to; UNAVAILABLE is retried, which is safe because ExecuteTool is
idempotent by tool-call id.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

import grpc
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as pb
from s2c.tools.v1 import tool_service_pb2_grpc as pb_grpc

from services.agent.changes_proto import widths_from_proto
from services.agent.domain import FileState
from services.agent.events import ChangedWidth
from services.agent.fidelity_proto import fidelity_from_proto, regions_from_proto
from services.agent.providers.base import MediaPart, ToolCall, ToolSpec
from services.agent.tooling import FidelityAnswer, ToolContext, ToolOffer, ToolOutcome
from services.common.accessibility import report_from_proto
from services.common.credentials import TOOL_IDS, Credentials, credentials_to_proto
from services.common.errors import FieldViolation, bad_request_violations, error_info
from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.input_images import (
    NOT_HELD_DOMAIN,
    NOT_HELD_REASON,
    ImagesNotHeld,
    InputImage,
)
from services.common.react_project import ProjectBuild
from services.common.security import GrpcSecurity, create_channel
from services.common.structs import from_struct, to_struct
from services.common.tool_types import OWNER_METADATA, CapturedImage
from services.common.tracing import Metadata, outgoing_metadata

_SERVICE_CONFIG = json.dumps(
    {
        "loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [
            {
                "name": [{"service": "s2c.tools.v1.ToolService"}],
                "retryPolicy": {
                    "maxAttempts": 4,
                    "initialBackoff": "0.1s",
                    "maxBackoff": "1s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ],
    }
)

DEFAULT_CALL_TIMEOUT_S = 120.0


class ToolServiceError(Exception):
    """The tool service could not be reached or answered with an RPC error."""


class ToolCallFailed(ToolServiceError):
    """The tool service answered a call with an error status, passed on to our caller."""

    def __init__(
        self, code: grpc.StatusCode, message: str, violations: list[FieldViolation]
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.violations = violations


CaptureDevice = Literal["", "desktop", "mobile"]  # "": the worker's default
CaptureFormat = Literal["", "png", "jpeg"]


@dataclass(frozen=True, slots=True)
class UrlCapture:
    url: str
    device: CaptureDevice = ""
    format: CaptureFormat = ""


_DEVICES = {
    "": pb.CAPTURE_DEVICE_UNSPECIFIED,
    "desktop": pb.CAPTURE_DEVICE_DESKTOP,
    "mobile": pb.CAPTURE_DEVICE_MOBILE,
}
_FORMATS = {
    "": pb.CAPTURE_FORMAT_UNSPECIFIED,
    "png": pb.CAPTURE_FORMAT_PNG,
    "jpeg": pb.CAPTURE_FORMAT_JPEG,
}


def channel_target(addr: str) -> str:
    """`host:port`, `dns:///host:port`, or a comma list (→ an `ipv4:` / `ipv6:` target)."""
    addr = addr.strip()
    if "," not in addr or ":///" in addr:
        return addr
    parts = [p.strip() for p in addr.split(",") if p.strip()]
    if parts[0].startswith(("ipv4:", "ipv6:")):
        return addr
    return "ipv4:" + ",".join(parts)


class GrpcToolExecutor:
    def __init__(
        self,
        target: str,
        *,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        security: GrpcSecurity | None = None,
    ) -> None:
        options = [*CHANNEL_OPTIONS, ("grpc.service_config", _SERVICE_CONFIG)]
        self._target = target
        self._channel = create_channel(channel_target(target), security or GrpcSecurity(), options)
        self._stub = pb_grpc.ToolServiceStub(self._channel)
        self._call_timeout_s = call_timeout_s

    async def close(self) -> None:
        await self._channel.close()

    async def list_tools(self, context: ToolContext) -> ToolOffer:
        request = pb.ListToolsRequest(
            flags=_flags(context), credentials=_tool_credentials(context.credentials)
        )
        try:
            response = await self._stub.ListTools(request, timeout=10.0, wait_for_ready=True)
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from None
        return ToolOffer(
            tuple(
                ToolSpec(t.name, t.description, from_struct(t.input_schema)) for t in response.tools
            ),
            dict(response.unavailable),
        )

    async def execute(
        self, call: ToolCall, file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        proto_call = pb.ToolCall(id=call.id, name=call.name, arguments=to_struct(call.arguments))
        if call.invalid_json is not None:
            proto_call.invalid_json = call.invalid_json
        request = pb.ExecuteToolRequest(
            call=proto_call,
            context=pb.ToolContext(
                images=[_reference(image) for image in context.input_images],
                option_codes=context.option_codes,
                flags=_flags(context),
                credentials=_tool_credentials(context.credentials),
                asset_base_url=context.asset_base_url,
                viewport_widths=context.viewport_widths,
                image_tags=[
                    pb.ImageTag(path=i.tag.path, viewport_width=i.tag.viewport_width)
                    for i in context.input_images
                ],
                max_project_bytes=context.max_project_bytes,
                build=_BUILDS[context.build],
            ),
            # One file is the project: `file` says it all (and old workers read only that).
            files=(
                [common_pb2.FileState(path=f.path, content=f.content) for f in context.files]
                if len(context.files) > 1
                else []
            ),
        )
        if file is not None:
            request.file.CopyFrom(common_pb2.FileState(path=file.path, content=file.content))
        timeout = self._call_timeout_s
        if context.time_left_s is not None:
            timeout = max(0.1, min(timeout, context.time_left_s))
        try:
            response = await _sending_images(
                self._stub.ExecuteTool,
                request,
                request.context.images,
                context.input_images,
                timeout=timeout,
                metadata=_metadata(context.owner),
            )
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from None
        return ToolOutcome(
            ok=response.ok,
            result=from_struct(response.result),
            summary=from_struct(response.summary),
            updated_file=_file(response, "updated_file"),
            media=tuple(_media(part) for part in response.media),
            built_file=_file(response, "built_file"),
        )

    async def capture_url(self, capture: UrlCapture, *, timeout_s: float | None) -> CapturedImage:
        """Has a worker capture a URL; ToolCallFailed carries the worker's status code."""
        request = pb.CaptureUrlRequest(
            url=capture.url, device=_DEVICES[capture.device], format=_FORMATS[capture.format]
        )
        timeout = self._call_timeout_s if timeout_s is None else max(0.1, timeout_s)
        try:
            # No wait_for_ready: with no worker up, the caller hears so at once.
            response = await self._stub.CaptureUrl(
                request, timeout=timeout, metadata=outgoing_metadata()
            )
        except grpc.aio.AioRpcError as exc:
            code, message = exc.code(), exc.details() or ""
            if code == grpc.StatusCode.UNAVAILABLE and not message.startswith("URL capture"):
                message = f"URL capture is unavailable: no tool worker at {self._target} answered"
            elif code == grpc.StatusCode.DEADLINE_EXCEEDED and not message.startswith("Capturing"):
                message = f"Capturing {capture.url} timed out after {timeout:g} s"
            raise ToolCallFailed(code, message, bad_request_violations(exc)) from None
        return CapturedImage.from_message(response)

    async def score_fidelity(
        self,
        code: str,
        image: InputImage,
        *,
        image_index: int,
        timeout_s: float,
        with_regions: bool,
        path: str = "",
        files: tuple[FileState, ...] = (),
        viewport_width: int = 0,
        owner: str = "",
        check_accessibility: bool = False,
    ) -> FidelityAnswer:
        request = pb.ScoreFidelityRequest(
            check_accessibility=check_accessibility,
            code=code,
            reference=_reference(image),
            image_index=image_index,
            with_regions=with_regions,
            path=path,
            files=[common_pb2.FileState(path=f.path, content=f.content) for f in files],
            viewport_width=viewport_width,
        )
        try:
            response = await _sending_images(
                self._stub.ScoreFidelity,
                request,
                [request.reference],
                (image,),
                timeout=max(0.1, timeout_s),
                metadata=_metadata(owner),
            )
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from None
        fidelity = fidelity_from_proto(response.fidelity)
        regions = regions_from_proto(response.regions)
        accessibility = (
            report_from_proto(response.accessibility)
            if response.HasField("accessibility")
            else None
        )
        return FidelityAnswer(
            replace(fidelity, regions=regions), response.comparison_png, accessibility
        )

    async def compare_renders(
        self,
        before: tuple[FileState, ...],
        after: tuple[FileState, ...],
        *,
        widths: tuple[int, ...],
        selected_element_html: str,
        timeout_s: float,
        owner: str = "",
    ) -> tuple[ChangedWidth, ...]:
        def files(project: tuple[FileState, ...]) -> list[common_pb2.FileState]:
            return [common_pb2.FileState(path=f.path, content=f.content) for f in project[1:]]

        request = pb.CompareRendersRequest(
            before=before[0].content,
            after=after[0].content,
            before_files=files(before),
            after_files=files(after),
            path=after[0].path,
            viewport_widths=widths,
            selected_element_html=selected_element_html,
        )
        try:
            response = await self._stub.CompareRenders(
                request, timeout=max(0.1, timeout_s), metadata=_metadata(owner)
            )
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from None
        return widths_from_proto(response.widths)

    async def build_project(
        self, files: Mapping[str, str], build: ProjectBuild, *, timeout_s: float, owner: str = ""
    ) -> str | None:
        """The page a worker builds of `files`, or None when they do not build."""
        request = pb.BuildProjectRequest(
            build=_BUILDS[build],
            files=[common_pb2.FileState(path=p, content=c) for p, c in files.items()],
        )
        try:
            response = await self._stub.BuildProject(
                request, timeout=timeout_s, wait_for_ready=True, metadata=_metadata(owner)
            )
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from None
        return response.page if response.ok else None

    def _error(self, exc: grpc.aio.AioRpcError) -> ToolServiceError:
        return ToolServiceError(
            f"Tool service at {self._target} failed: {exc.code().name}: {exc.details()}"
        )


def _file(response: pb.ExecuteToolResponse, name: str) -> FileState | None:
    if not response.HasField(name):
        return None
    file: common_pb2.FileState = getattr(response, name)
    return FileState(file.path, file.content)


_BUILDS: dict[ProjectBuild, pb.ProjectBuild] = {
    "none": pb.PROJECT_BUILD_UNSPECIFIED,
    "react_vite": pb.PROJECT_BUILD_REACT_VITE,
}


def _metadata(owner: str) -> Metadata:
    """The trace context, and whom the call is for (the workers' fair share of their
    browser: services/tools/slots.py)."""
    return [*outgoing_metadata(), (OWNER_METADATA, owner)] if owner else outgoing_metadata()


Request = TypeVar("Request", pb.ExecuteToolRequest, pb.ScoreFidelityRequest)
Response = TypeVar("Response")


async def _sending_images(
    rpc: Callable[..., Awaitable[Response]],
    request: Request,
    references: Sequence[pb.InputImage],
    images: Sequence[InputImage],
    *,
    timeout: float,  # noqa: ASYNC109 (a gRPC deadline, passed on, not a local wait)
    metadata: Metadata,
) -> Response:
    """The call, its input images named by hash only; a worker that does not hold some
    (FAILED_PRECONDITION, ImagesNotHeld) is asked again with their bytes, and, should it
    have dropped others meanwhile, once more with every image's. So a call's size does not
    grow with the generation's images: each worker gets each image once and keeps it for
    the calls that follow (services/tools/image_store.py)."""
    for attempt in range(3):
        try:
            return await rpc(request, timeout=timeout, wait_for_ready=True, metadata=metadata)
        except grpc.aio.AioRpcError as exc:
            missing = _not_held(exc)
            if missing is None or attempt == 2:
                raise
        for reference, image in zip(references, images, strict=True):
            if attempt == 1 or reference.sha256 in missing:
                reference.data = image.data
    raise AssertionError("unreachable: the last attempt returns or raises")


def _not_held(exc: grpc.aio.AioRpcError) -> set[str] | None:
    """The digests of the images a worker said it does not hold; None for other errors."""
    info = error_info(exc) if exc.code() == grpc.StatusCode.FAILED_PRECONDITION else None
    if info is None or (info.reason, info.domain) != (NOT_HELD_REASON, NOT_HELD_DOMAIN):
        return None
    return set(ImagesNotHeld.from_metadata(info.metadata).digests)


def _reference(image: InputImage) -> pb.InputImage:
    return pb.InputImage(sha256=image.sha256, mime_type=image.mime_type)


def _tool_credentials(credentials: Credentials) -> common_pb2.Credentials:
    # Least privilege: a worker gets the Replicate and Gemini credentials its tools use,
    # never the request's model keys.
    return credentials_to_proto(credentials.only(TOOL_IDS))


def _flags(context: ToolContext) -> pb.ToolFlags:
    return pb.ToolFlags(
        image_generation_enabled=context.image_generation_enabled,
        asset_extraction_enabled=context.asset_extraction_enabled,
        has_input_images=bool(context.input_images) or context.assume_input_images,
    )


def _media(part: common_pb2.MediaPart) -> MediaPart:
    if part.WhichOneof("source") == "data":
        return MediaPart(part.display_name, part.mime_type, data=part.data)
    return MediaPart(part.display_name, part.mime_type, url=part.url)
