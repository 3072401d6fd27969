"""AgentService over gRPC: converts proto ⇄ domain and delegates to the manager."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TypeVar, get_args

import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2

from services.agent.admission import Busy
from services.agent.archive import replay
from services.agent.convert import (
    event_to_proto,
    request_from_proto,
    run_to_proto,
)
from services.agent.core import AgentCore
from services.agent.eventlog import Streamed
from services.agent.events import Event
from services.agent.generation import Generation
from services.agent.manager import ShuttingDown
from services.agent.metrics import AgentMetrics
from services.agent.models import listing
from services.agent.planning import LEAVE_ID_EMPTY
from services.agent.providers import registry
from services.agent.runstore_health import StoreUnavailable
from services.agent.settings import AgentSettings
from services.agent.tool_client import (
    CaptureDevice,
    CaptureFormat,
    GrpcToolExecutor,
    ToolCallFailed,
    ToolServiceError,
    UrlCapture,
)
from services.agent.tooling import ToolContext
from services.common.credentials import Credentials, credentials_from_proto
from services.common.errors import FieldViolation, InvalidRequest, abort, abort_invalid, clip
from services.common.generation_ids import GENERATION_ID_HEADER
from services.common.proto_enums import enum_names, enum_values
from services.common.tracing import incoming_context, tracer

log = logging.getLogger(__name__)

Context = grpc.aio.ServicerContext[object, object]

MAX_BATCH_BYTES = 1 << 20
# A repeated message field costs a tag byte and a length varint (≤ 5 bytes) per element.
_FIELD_OVERHEAD = 6
# A streamed delta's bytes besides its text (≤ 4 UTF-8 bytes a character) and ids: that
# field's overhead, sequence, variant index and offset (varints of ≤ 10 bytes, with their
# tags), and the tags and lengths of the ids and the payload.
_DELTA_OVERHEAD = _FIELD_OVERHEAD + 3 * 11 + 16
R = TypeVar("R", pb.GenerateCodeResponse, pb.WatchGenerationResponse)
MAX_CAPTURE_URL_CHARS = 2048
_CAPTURE_DEVICES: dict[int, CaptureDevice] = enum_names(
    pb.CaptureDevice, get_args(CaptureDevice), ""
)
_CAPTURE_FORMATS: dict[int, CaptureFormat] = enum_names(
    pb.CaptureFormat, get_args(CaptureFormat), ""
)


class AgentServicer(pb_grpc.AgentServiceServicer):
    def __init__(
        self,
        settings: AgentSettings,
        core: AgentCore,
        tools: GrpcToolExecutor,
        metrics: AgentMetrics,
    ) -> None:
        self._settings = settings
        self._planner = core.planner
        self._manager = core.manager
        self._archive = core.archive
        self._tools = tools  # capabilities, and CaptureUrl forwarded to a worker
        self._events_sent = metrics.events_sent

    async def GenerateCode(
        self, request: pb.GenerateCodeRequest, context: Context
    ) -> AsyncIterator[pb.GenerateCodeResponse]:
        generation = await self._start(request, context)
        # Headers now, before any event: they tell the gateway this agent admitted the
        # generation (so only a refusal is worth trying on another agent), and its id.
        await context.send_initial_metadata(((GENERATION_ID_HEADER, generation.id),))
        async for events in self._held(generation, 0):
            for message in chunk_events(events, pb.GenerateCodeResponse):
                yield message

    async def WatchGeneration(
        self, request: pb.WatchGenerationRequest, context: Context
    ) -> AsyncIterator[pb.WatchGenerationResponse]:
        async for events in self._watched(request, context):
            for message in chunk_events(events, pb.WatchGenerationResponse):
                yield message

    async def _start(self, request: pb.GenerateCodeRequest, context: Context) -> Generation:
        domain, found = request_from_proto(request, self._settings.max_project_files)
        try:
            # In a thread: planning parses every input image once (base64, SHA-256, the
            # header against the image budget), before any provider or tool sees one.
            plan = await asyncio.to_thread(self._planner.plan, domain, found)
        except InvalidRequest as exc:
            await abort_invalid(context, exc)
        if domain.generation_id:
            await self._refuse_if_on_record(plan.id, context)
        try:
            parent = incoming_context(context.invocation_metadata())
            # The generation task starts inside this span, so its spans are children.
            with tracer("s2c.agent").start_as_current_span(
                "GenerateCode", context=parent, attributes={"s2c.generation_id": plan.id}
            ):
                # The caller's deadline bounds the generation, too.
                return self._manager.start(plan, deadline_s=context.time_remaining())
        except ShuttingDown as exc:
            await abort(context, grpc.StatusCode.UNAVAILABLE, str(exc))
        except Busy as exc:
            log.info(
                "generation refused: busy", extra={"generation_id": plan.id, "reason": str(exc)}
            )
            await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except ValueError as exc:
            await abort(context, grpc.StatusCode.ALREADY_EXISTS, str(exc))

    async def _refuse_if_on_record(self, generation_id: str, context: Context) -> None:
        """A client's own id must be new: this generation's saves would overwrite the
        record under it, a retired run's included (the manager refuses an id still in
        memory). Nothing awaits between this look-up and the start, so of two requests
        for one new id the second meets the first in the manager."""
        try:
            record = await self._archive.stored(generation_id)
        except StoreUnavailable as exc:
            # Unknowable now; a minted id (none given) needs no look-up.
            await abort(context, grpc.StatusCode.UNAVAILABLE, clip(str(exc), 400))
        if record is not None:
            await abort(
                context,
                grpc.StatusCode.ALREADY_EXISTS,
                f"generation_id {clip(generation_id, 80)!r} is taken: a generation of that id "
                f"is on record. {LEAVE_ID_EMPTY}",
            )

    async def _held(self, generation: Generation, after: int) -> AsyncIterator[Sequence[Event]]:
        # Every open stream holds the generation. The last one going away does not stop
        # the work: a client re-attaches within the resume grace (Generation.release);
        # stopping is CancelGeneration's, or the deadline's.
        generation.acquire()
        try:
            async for events in generation.batches(after):
                self._events_sent.inc(len(events))
                yield events
        finally:
            generation.release()

    async def _watched(
        self, request: pb.WatchGenerationRequest, context: Context
    ) -> AsyncIterator[Sequence[Event]]:
        generation = self._manager.get(request.generation_id)
        if generation is not None:
            async for events in self._held(generation, request.after_sequence):
                yield events
            return
        # Retired, or left by an agent that restarted: the final state its record keeps,
        # ending the way the generation ended (a run still "running" is another replica's).
        record = await self._archive.stored(request.generation_id)
        if record is None or record.status == "running":
            await self._find(request.generation_id, context)  # NOT_FOUND
            return
        events = replay(record, request.after_sequence)
        self._events_sent.inc(len(events))
        yield events

    async def CancelGeneration(
        self, request: pb.CancelGenerationRequest, context: Context
    ) -> pb.CancelGenerationResponse:
        generation = await self._find(request.generation_id, context)
        return pb.CancelGenerationResponse(cancelled=generation.cancel())

    async def GetGeneration(
        self, request: pb.GetGenerationRequest, context: Context
    ) -> pb.GetGenerationResponse:
        generation = self._manager.get(request.generation_id)
        try:
            record = (
                self._archive.snapshot(generation)
                if generation is not None
                else await self._archive.stored(request.generation_id)
            )
        except StoreUnavailable as exc:
            # Not NOT_FOUND: the record may exist, or exist stale; retry once storage heals.
            await abort(context, grpc.StatusCode.UNAVAILABLE, clip(str(exc), 400))
        if record is None:
            await abort(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"no generation {clip(request.generation_id, 80)!r} on record",
            )
        return pb.GetGenerationResponse(generation=run_to_proto(record))

    async def ListModels(
        self, request: pb.ListModelsRequest, context: Context
    ) -> pb.ListModelsResponse:
        credentials = await self._resolved(request.credentials, context)
        keys = frozenset(p.id for p in registry.KEYED if credentials.key(p.credential))
        settings = self._settings
        models = [
            pb.Model(
                id=m.spec.id,
                provider=m.spec.provider,
                api_name=m.spec.api_name,
                available=m.available,
                vision=m.spec.vision,
                tools=m.spec.tools,
                video=m.video,
                endpoint=m.spec.endpoint,
                credential=m.credential,
            )
            for m in listing(keys, settings.local_models, settings.endpoints)
        ]
        return pb.ListModelsResponse(models=models, stacks=list(enum_values(pb.Stack).values()))

    async def GetCapabilities(
        self, request: pb.GetCapabilitiesRequest, context: Context
    ) -> pb.GetCapabilitiesResponse:
        await self._resolved(request.credentials, context)
        wanted = ToolContext(
            credentials=credentials_from_proto(request.credentials), assume_input_images=True
        )
        try:
            offer = await self._tools.list_tools(wanted)
        except ToolServiceError as exc:
            await abort(context, grpc.StatusCode.UNAVAILABLE, str(exc))
        return pb.GetCapabilitiesResponse(
            tools=offer.names,
            screenshot_preview="screenshot_preview" in offer.names,
            unavailable=offer.unavailable,
        )

    async def CaptureUrl(
        self, request: pb.CaptureUrlRequest, context: Context
    ) -> pb.CaptureUrlResponse:
        violations: list[FieldViolation] = []
        if not request.url.strip():
            violations.append(FieldViolation("url", "url is required"))
        elif len(request.url) > MAX_CAPTURE_URL_CHARS:
            violations.append(FieldViolation("url", f"at most {MAX_CAPTURE_URL_CHARS} characters"))
        device = _CAPTURE_DEVICES.get(request.device)
        if device is None:
            violations.append(FieldViolation("device", f"unknown device {request.device}"))
        fmt = _CAPTURE_FORMATS.get(request.format)
        if fmt is None:
            violations.append(FieldViolation("format", f"unknown format {request.format}"))
        if violations or device is None or fmt is None:
            await abort_invalid(context, InvalidRequest(violations))
        try:
            image = await self._tools.capture_url(
                UrlCapture(request.url, device, fmt), timeout_s=context.time_remaining()
            )
        except ToolCallFailed as exc:
            # The worker's verdict, as it gave it: its code and words are the user's answer.
            if exc.code == grpc.StatusCode.INVALID_ARGUMENT and exc.violations:
                await abort_invalid(context, InvalidRequest(exc.violations))
            await abort(context, exc.code, clip(exc.message, 600))
        return pb.CaptureUrlResponse(**image.fields())

    async def GetAgentInfo(
        self, request: pb.GetAgentInfoRequest, context: Context
    ) -> pb.GetAgentInfoResponse:
        return pb.GetAgentInfoResponse(name=self._planner.name)

    async def _resolved(self, proto: common_pb2.Credentials, context: Context) -> Credentials:
        """The request's credentials resolved against ours, or INVALID_ARGUMENT."""
        policy = self._settings.credential_policy
        credentials = credentials_from_proto(proto)
        violations = policy.violations(credentials, prefix="credentials.")
        if violations:
            await abort_invalid(context, InvalidRequest(violations))
        return policy.resolve(credentials)

    async def _find(self, generation_id: str, context: Context) -> Generation:
        generation = self._manager.get(generation_id)
        if generation is None:
            await abort(
                context,
                grpc.StatusCode.NOT_FOUND,
                f"no generation {clip(generation_id, 80)!r} on this agent",
            )
        return generation


def chunk_events(events: Sequence[Event], response: Callable[[], R]) -> Iterator[R]:
    """The events as consecutive `response()` messages of at most MAX_BATCH_BYTES each (one
    event larger than that goes alone), never an empty one."""
    # A re-attaching client may get a long log at once, and snapshots are large: keep
    # each message well under the channel's limit. A streamed delta is sized by a bound
    # (no protobuf `ByteSize` per event: they are most events, and small).
    message = response()
    size = 0
    for event in events:
        payload = event.payload
        if isinstance(payload, Streamed):
            ids = len(event.event_id) + len(event.generation_id)
            cost = 4 * (len(payload.text) + ids) + _DELTA_OVERHEAD
            proto = None
        else:
            proto = event_to_proto(event)
            cost = proto.ByteSize() + _FIELD_OVERHEAD
        if size and size + cost > MAX_BATCH_BYTES:
            yield message
            message, size = response(), 0
        if proto is None:
            event_to_proto(event, message.events.add())
        else:
            message.events.append(proto)
        size += cost
    if size:
        yield message
