"""ToolService over gRPC: converts proto ⇄ domain and delegates to the worker."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import NoReturn, get_args

import grpc
from google.rpc.error_details_pb2 import ErrorInfo
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as pb
from s2c.tools.v1 import tool_service_pb2_grpc as pb_grpc

from services.common.accessibility import report_to_proto
from services.common.credentials import Credentials, credentials_from_proto
from services.common.errors import (
    FieldViolation,
    InvalidRequest,
    abort,
    abort_invalid,
)
from services.common.input_images import (
    NOT_HELD_DOMAIN,
    NOT_HELD_REASON,
    ImagesNotHeld,
    parse_input_image,
)
from services.common.project_paths import ENTRY_PATH
from services.common.proto_enums import enum_names
from services.common.react_project import BUILT_PATH, ProjectBuild
from services.common.structs import from_struct, to_struct
from services.common.tool_types import OWNER_METADATA, FileState, ImageTag, MediaPart, ToolCall
from services.common.tracing import incoming_context, tracer
from services.tools.capture import CaptureError, CaptureErrorKind, CaptureRequest, Device, Format
from services.tools.fidelity import ScoringError
from services.tools.fidelity_proto import changes_response, fidelity_response
from services.tools.image_store import BadImageRef, ImageRef
from services.tools.types import ToolContext, ToolFlags, ToolOutcome
from services.tools.worker import ToolWorker

log = logging.getLogger(__name__)

Context = grpc.aio.ServicerContext[object, object]
MAX_ID_LENGTH = 256
MAX_NAME_LENGTH = 64


class ToolServicer(pb_grpc.ToolServiceServicer):
    def __init__(self, worker: ToolWorker) -> None:
        self._worker = worker

    def _credential_violations(self, credentials: Credentials, prefix: str) -> list[FieldViolation]:
        # Direct callers too: a request's base URL never gets this worker's own key.
        return self._worker.settings.credential_policy.violations(credentials, prefix=prefix)

    async def ListTools(
        self, request: pb.ListToolsRequest, context: Context
    ) -> pb.ListToolsResponse:
        credentials = credentials_from_proto(request.credentials)
        violations = self._credential_violations(credentials, "credentials.")
        if violations:
            await abort_invalid(context, InvalidRequest(violations))
        definitions = await self._worker.definitions(_flags(request.flags), credentials)
        return pb.ListToolsResponse(
            tools=[
                pb.ToolDefinition(
                    name=d.name, description=d.description, input_schema=to_struct(d.input_schema)
                )
                for d in definitions
            ],
            unavailable=self._worker.unavailable(),
        )

    async def ExecuteTool(
        self, request: pb.ExecuteToolRequest, context: Context
    ) -> pb.ExecuteToolResponse:
        violations: list[FieldViolation] = []
        if not request.call.name:
            violations.append(FieldViolation("call.name", "required"))
        elif len(request.call.name) > MAX_NAME_LENGTH:
            violations.append(FieldViolation("call.name", f"at most {MAX_NAME_LENGTH} characters"))
        if len(request.call.id) > MAX_ID_LENGTH:
            violations.append(FieldViolation("call.id", f"at most {MAX_ID_LENGTH} characters"))
        violations += self._credential_violations(
            credentials_from_proto(request.context.credentials), "context.credentials."
        )
        if violations:
            await abort_invalid(context, InvalidRequest(violations))
        call = ToolCall(
            id=request.call.id,
            name=request.call.name,
            arguments=from_struct(request.call.arguments),
            invalid_json=(
                request.call.invalid_json if request.call.HasField("invalid_json") else None
            ),
        )
        file = (
            FileState(request.file.path or "index.html", request.file.content)
            if request.HasField("file")
            else None
        )
        ctx = request.context
        with tracer("s2c.tools").start_as_current_span(
            f"ExecuteTool {call.name}",
            context=incoming_context(context.invocation_metadata()),
            attributes={"s2c.tool_call_id": call.id},
        ) as span:
            try:
                outcome = await self._execute(call, file, ctx, request.files, _owner(context))
            except BadImageRef as exc:
                violation = FieldViolation(f"context.{exc.field}", exc.problem)
                await abort_invalid(context, InvalidRequest([violation]))
            except ImagesNotHeld as exc:
                await _not_held(context, exc)
            span.set_attribute("s2c.ok", outcome.ok)
        response = pb.ExecuteToolResponse(
            ok=outcome.ok,
            result=to_struct(outcome.result),
            summary=to_struct(outcome.summary),
            media=[_media(part) for part in outcome.media],
        )
        if outcome.updated_file is not None:
            response.updated_file.CopyFrom(
                common_pb2.FileState(
                    path=outcome.updated_file.path, content=outcome.updated_file.content
                )
            )
        if outcome.built_file is not None:
            built = outcome.built_file
            page = common_pb2.FileState(path=built.path, content=built.content)
            response.built_file.CopyFrom(page)
        return response

    async def CaptureUrl(
        self, request: pb.CaptureUrlRequest, context: Context
    ) -> pb.CaptureUrlResponse:
        capture = CaptureRequest(
            url=request.url,
            device=_DEVICES.get(request.device, "desktop"),
            format=_FORMATS.get(request.format, "auto"),
        )
        with tracer("s2c.tools").start_as_current_span(
            "CaptureUrl", context=incoming_context(context.invocation_metadata())
        ):
            try:
                result = await self._worker.capture_url(capture, timeout_s=context.time_remaining())
            except CaptureError as exc:
                if exc.kind is CaptureErrorKind.INVALID:
                    await abort_invalid(
                        context, InvalidRequest([FieldViolation("url", exc.message)])
                    )
                await abort(context, _CAPTURE_CODES[exc.kind], exc.message)
            except Exception:
                # Never an exception's text to the caller: it is ours to read, not theirs.
                log.exception("URL capture failed")
                await abort(
                    context, grpc.StatusCode.INTERNAL, "URL capture failed on the tool worker"
                )
        return pb.CaptureUrlResponse(**result.fields())

    async def ScoreFidelity(
        self, request: pb.ScoreFidelityRequest, context: Context
    ) -> pb.ScoreFidelityResponse:
        remaining = context.time_remaining()
        with tracer("s2c.tools").start_as_current_span(
            "ScoreFidelity", context=incoming_context(context.invocation_metadata())
        ):
            try:
                (image,) = self._worker.inputs.resolve([_score_reference(request)])
            except BadImageRef as exc:
                field = "reference" if request.HasField("reference") else "image"
                violation = FieldViolation(f"{field}.{exc.field.partition('.')[2]}", exc.problem)
                await abort_invalid(context, InvalidRequest([violation]))
            except ImagesNotHeld as exc:
                await _not_held(context, exc)
            try:
                outcome = await self._worker.fidelity.score_page(
                    FileState(request.path or ENTRY_PATH, request.code),
                    tuple(FileState(f.path, f.content) for f in request.files),
                    image,
                    image_index=request.image_index,
                    width=request.viewport_width,
                    timeout_s=remaining if remaining is not None else 60.0,
                    with_regions=request.with_regions,
                    owner=_owner(context),
                    accessibility=request.check_accessibility,
                )
            except ScoringError as exc:
                field, _, message = str(exc).partition(": ")
                await abort_invalid(context, InvalidRequest([FieldViolation(field, message)]))
        response = fidelity_response(replace(outcome, path=request.path))
        if request.check_accessibility:
            report = self._worker.accessibility_of(outcome)
            response.accessibility.CopyFrom(report_to_proto(replace(report, path=request.path)))
        return response

    async def CompareRenders(
        self, request: pb.CompareRendersRequest, context: Context
    ) -> pb.CompareRendersResponse:
        remaining = context.time_remaining()
        path = request.path or ENTRY_PATH
        with tracer("s2c.tools").start_as_current_span(
            "CompareRenders", context=incoming_context(context.invocation_metadata())
        ):
            try:
                widths = await self._worker.changes.compare(
                    FileState(path, request.before),
                    FileState(path, request.after),
                    tuple(FileState(f.path, f.content) for f in request.before_files),
                    tuple(FileState(f.path, f.content) for f in request.after_files),
                    widths=tuple(request.viewport_widths),
                    selected=request.selected_element_html,
                    timeout_s=remaining if remaining is not None else 60.0,
                    owner=_owner(context),
                )
            except ScoringError as exc:
                field, _, message = str(exc).partition(": ")
                await abort_invalid(context, InvalidRequest([FieldViolation(field, message)]))
        return changes_response(widths)

    async def BuildProject(
        self, request: pb.BuildProjectRequest, context: Context
    ) -> pb.BuildProjectResponse:
        build = _BUILDS[request.build]
        files = {f.path: f.content for f in request.files}
        violations = self._worker.build_violations(build, files)
        if violations:
            await abort_invalid(context, InvalidRequest(violations))
        files.pop(BUILT_PATH, None)  # the last build's page is not a source
        built = await self._worker.builder.build(files)
        return pb.BuildProjectResponse(
            ok=built.html is not None,
            page=built.html or "",
            errors=[str(e) for e in built.errors],
        )

    async def _execute(
        self,
        call: ToolCall,
        file: FileState | None,
        ctx: pb.ToolContext,
        files: Iterable[common_pb2.FileState],
        owner: str,
    ) -> ToolOutcome:
        return await self._worker.execute(
            call,
            file,
            ToolContext(
                option_codes=tuple(ctx.option_codes),
                flags=_flags(ctx.flags),
                credentials=credentials_from_proto(ctx.credentials),
                asset_base_url=ctx.asset_base_url,
                files=tuple(FileState(f.path, f.content) for f in files),
                viewport_widths=tuple(ctx.viewport_widths),
                max_project_bytes=ctx.max_project_bytes,
                owner=owner,
                build=_BUILDS[ctx.build],
            ),
            _image_refs(ctx),
        )


_BUILDS: dict[int, ProjectBuild] = enum_names(pb.ProjectBuild, get_args(ProjectBuild), "none")
_DEVICES: dict[int, Device] = enum_names(pb.CaptureDevice, get_args(Device), "desktop")
_FORMATS: dict[int, Format] = enum_names(pb.CaptureFormat, get_args(Format), "auto")
# The codes the proto documents for each failure (INVALID gets its BadRequest above).
_CAPTURE_CODES = {
    CaptureErrorKind.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    CaptureErrorKind.REFUSED: grpc.StatusCode.PERMISSION_DENIED,
    CaptureErrorKind.TIMEOUT: grpc.StatusCode.DEADLINE_EXCEEDED,
    CaptureErrorKind.TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    CaptureErrorKind.LOAD_FAILED: grpc.StatusCode.FAILED_PRECONDITION,
    CaptureErrorKind.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
}


def _owner(context: Context) -> str:
    """Whom the call is for, as the agent names it; empty: a caller that did not say."""
    for key, value in context.invocation_metadata() or ():
        if key == OWNER_METADATA and isinstance(value, str):
            return value[:MAX_ID_LENGTH]
    return ""


def _image_refs(ctx: pb.ToolContext) -> list[ImageRef]:
    """The call's input images with their tags: by hash (`images`), or as data URLs from
    an agent that sends them whole (`input_images`), parsed here once."""
    tags = [ImageTag(t.path, t.viewport_width) for t in ctx.image_tags]
    tags += [ImageTag()] * (max(len(ctx.images), len(ctx.input_images)) - len(tags))
    if ctx.images:
        return [
            ImageRef(i.sha256, i.mime_type, i.data, tag)
            for i, tag in zip(ctx.images, tags, strict=False)
        ]
    refs = []
    for url, tag in zip(ctx.input_images, tags, strict=False):
        try:
            image = parse_input_image(url)
        except ValueError:
            continue  # not an image the tools read (the agent lists only those)
        refs.append(ImageRef(image.sha256, image.mime_type, image.data, tag))
    return refs


def _score_reference(request: pb.ScoreFidelityRequest) -> ImageRef:
    if request.HasField("reference"):
        ref = request.reference
        return ImageRef(ref.sha256, ref.mime_type, ref.data)
    try:
        image = parse_input_image(request.image)
    except ValueError:
        raise BadImageRef(0, "data", "not a data URL of a PNG, JPEG, GIF or WebP image") from None
    return ImageRef(image.sha256, image.mime_type, image.data)


async def _not_held(context: Context, exc: ImagesNotHeld) -> NoReturn:
    # Not the caller's fault: the agent sends the bytes and asks again.
    info = ErrorInfo(reason=NOT_HELD_REASON, domain=NOT_HELD_DOMAIN, metadata=exc.metadata)
    await abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc), info=info)


def _flags(flags: pb.ToolFlags) -> ToolFlags:
    return ToolFlags(
        image_generation_enabled=flags.image_generation_enabled,
        asset_extraction_enabled=flags.asset_extraction_enabled,
        has_input_images=flags.has_input_images,
    )


def _media(part: MediaPart) -> common_pb2.MediaPart:
    if part.data is not None:
        return common_pb2.MediaPart(
            display_name=part.display_name, mime_type=part.mime_type, data=part.data
        )
    return common_pb2.MediaPart(
        display_name=part.display_name, mime_type=part.mime_type, url=part.url or ""
    )
