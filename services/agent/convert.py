"""proto ⇄ domain for the agent service, with request validation."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import assert_never, get_args

from google.protobuf import timestamp_pb2
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.agent import events as ev
from services.agent.changes_proto import changes_to_proto
from services.agent.domain import (
    FileState,
    GenerationRequest,
    GenerationType,
    HistoryMessage,
    ImageMeta,
    InputMode,
    Prompt,
    Stack,
)
from services.agent.eventlog import MAX_CODE_BATCH_CHARS
from services.agent.fidelity_proto import fidelity_to_proto
from services.agent.models import MAX_VARIANTS
from services.agent.runstore import RunRecord
from services.common.accessibility import report_to_proto
from services.common.credentials import credentials_from_proto
from services.common.errors import FieldViolation
from services.common.proto_enums import enum_names
from services.common.structs import to_struct

_GENERATION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_IMAGE_DATA_URL = re.compile(r"data:image/(png|jpeg|jpg|gif|webp|heic|heif);base64,", re.I)
_VIDEO_DATA_URL = re.compile(r"data:video/[a-z0-9.+-]+;base64,", re.I)
MAX_IMAGES = 20
MAX_HISTORY = 200
MAX_SELECTED_ELEMENT = 200_000

_TYPES: dict[int, GenerationType] = enum_names(
    pb.GenerationType, get_args(GenerationType), "create"
)
_MODES: dict[int, InputMode] = enum_names(pb.InputMode, get_args(InputMode), "image")
STACK_NAMES: dict[int, Stack] = enum_names(pb.Stack, get_args(Stack), "html_tailwind")
_STATUS: dict[ev.RunStatus, pb.RunStatus] = {
    "running": pb.RUN_STATUS_RUNNING,
    "completed": pb.RUN_STATUS_COMPLETED,
    "failed": pb.RUN_STATUS_FAILED,
    "cancelled": pb.RUN_STATUS_CANCELLED,
    "interrupted": pb.RUN_STATUS_INTERRUPTED,
}


def _check_media(
    urls: list[str], field: str, pattern: re.Pattern[str], kind: str
) -> list[FieldViolation]:
    out = []
    if len(urls) > MAX_IMAGES:
        out.append(FieldViolation(field, f"at most {MAX_IMAGES} items, got {len(urls)}"))
    for i, url in enumerate(urls):
        if not (pattern.match(url) or url.startswith("https://")):
            out.append(
                FieldViolation(f"{field}[{i}]", f"must be a base64 {kind} data URL or an https URL")
            )
    return out


def _check_create_input(request: pb.GenerateCodeRequest) -> list[FieldViolation]:
    """A create must have something to build from in its input mode; else it would be a
    generation (and its cost) from an empty prompt."""
    if _TYPES.get(request.generation_type) != "create":
        return []
    mode = _MODES.get(request.input_mode)
    prompt = request.prompt
    if mode == "image" and not prompt.images:
        return [FieldViolation("prompt.images", "an image-mode create needs at least one image")]
    if mode == "video" and not prompt.videos:
        return [FieldViolation("prompt.videos", "a video-mode create needs a video")]
    if mode == "text" and not prompt.text.strip():
        return [FieldViolation("prompt.text", "a text-mode create needs a description")]
    return []


def request_from_proto(
    request: pb.GenerateCodeRequest, max_files: int = 0
) -> tuple[GenerationRequest, list[FieldViolation]]:
    """The domain request, and what is wrong with the proto's fields (an unknown enum
    value stands in as its default), so the planner reports them with its own
    (planning.py: model ids, credentials and the project are its to check).

    Of `files`, at most `max_files` + 1 are read (0: all): one past the bound is enough
    for the planner to refuse, and a million would take seconds of the event loop."""
    violations: list[FieldViolation] = []
    if request.generation_id and not _GENERATION_ID.fullmatch(request.generation_id):
        violations.append(
            FieldViolation("generation_id", "letters, digits, '-' and '_' only; at most 64")
        )
    for field, value, table in (
        ("generation_type", request.generation_type, _TYPES),
        ("input_mode", request.input_mode, _MODES),
        ("stack", request.stack, STACK_NAMES),
    ):
        if value not in table:
            violations.append(FieldViolation(field, f"unknown value {value}"))
    prompt = request.prompt
    violations += _check_media(list(prompt.images), "prompt.images", _IMAGE_DATA_URL, "image")
    violations += _check_media(list(prompt.videos), "prompt.videos", _VIDEO_DATA_URL, "video")
    if len(prompt.selected_element_html) > MAX_SELECTED_ELEMENT:
        # Rendered pages look for it in two renders per width: a page's worth at most.
        violations.append(
            FieldViolation(
                "prompt.selected_element_html", f"at most {MAX_SELECTED_ELEMENT} characters"
            )
        )
    if len(request.history) > MAX_HISTORY:
        violations.append(FieldViolation("history", f"at most {MAX_HISTORY} messages"))
    history: list[HistoryMessage] = []
    for i, message in enumerate(request.history):
        if message.role not in (pb.ROLE_USER, pb.ROLE_ASSISTANT):
            violations.append(FieldViolation(f"history[{i}].role", "must be USER or ASSISTANT"))
            continue
        violations += _check_media(
            list(message.images), f"history[{i}].images", _IMAGE_DATA_URL, "image"
        )
        violations += _check_media(
            list(message.videos), f"history[{i}].videos", _VIDEO_DATA_URL, "video"
        )
        history.append(
            HistoryMessage(
                "user" if message.role == pb.ROLE_USER else "assistant",
                message.text,
                tuple(message.images),
                tuple(message.videos),
            )
        )
    violations += _check_create_input(request)
    if not 0 <= request.variant_count <= MAX_VARIANTS:
        violations.append(FieldViolation("variant_count", f"must be 0..{MAX_VARIANTS}"))
    if not 0 <= request.code_batch_chars <= MAX_CODE_BATCH_CHARS:
        violations.append(FieldViolation("code_batch_chars", f"must be 0..{MAX_CODE_BATCH_CHARS}"))
    file_state = None
    if request.HasField("file_state") and request.file_state.content.strip():
        file_state = FileState(request.file_state.path or "index.html", request.file_state.content)
    domain = GenerationRequest(
        generation_id=request.generation_id,
        generation_type=_TYPES.get(request.generation_type, "create"),
        input_mode=_MODES.get(request.input_mode, "image"),
        stack=STACK_NAMES.get(request.stack, "html_tailwind"),
        prompt=Prompt(
            prompt.text,
            prompt.full_text if prompt.full_text.strip() else "",
            tuple(prompt.images),
            tuple(prompt.videos),
            tuple(
                ImageMeta(m.viewport_width if m.HasField("viewport_width") else None, m.page)
                for m in prompt.image_meta
            ),
            prompt.selected_element_html if prompt.selected_element_html.strip() else "",
        ),
        history=tuple(history),
        file_state=file_state,
        files=_project(request.files, max_files),
        option_codes=tuple(request.option_codes),
        asset_extraction_enabled=(
            request.asset_extraction_enabled
            if request.HasField("asset_extraction_enabled")
            else True
        ),
        image_generation_enabled=(
            request.image_generation_enabled
            if request.HasField("image_generation_enabled")
            else True
        ),
        design_system=request.design_system.strip(),
        credentials=credentials_from_proto(request.credentials),
        models=tuple(request.models),
        variant_count=request.variant_count,
        asset_base_url=request.asset_base_url.rstrip("/"),
        score_fidelity=request.score_fidelity,
        refine_rounds=request.refine_rounds if request.HasField("refine_rounds") else None,
        code_batch_chars=request.code_batch_chars,
    )
    return domain, violations


def _project(files: Sequence[common_pb2.FileState], max_files: int) -> tuple[FileState, ...]:
    """`files` as domain values: all of them, or (with a bound) at most one past it."""
    kept = files[: max_files + 1] if max_files > 0 else files
    return tuple(FileState(f.path, f.content) for f in kept)


def usage_to_proto(usage: ev.Usage) -> common_pb2.Usage:
    tokens = usage.tokens
    return common_pb2.Usage(
        input_tokens=tokens.input_tokens,
        output_tokens=tokens.output_tokens,
        cache_read_tokens=tokens.cache_read_tokens,
        cache_write_tokens=tokens.cache_write_tokens,
        total_tokens=tokens.total_tokens,
        cost_usd=usage.cost_usd,
        priced=usage.priced,
    )


# The payloads that belong to no variant (their domain events carry variant_index 0).
GENERATION_WIDE = (ev.VariantCount, ev.GenerationError, ev.GenerationComplete)


def event_to_proto(event: ev.Event, out: pb.GenerationEvent | None = None) -> pb.GenerationEvent:
    """Each payload class is the oneof member of the same name, field for field. Given
    `out` (an element just added to a response's `events`), fills it in place: building a
    message apart and copying it into the response cost twice as much."""
    if out is None:
        out = pb.GenerationEvent()
    out.sequence = event.sequence
    # The one event sent per model delta has its ids implied (the stream's generation, the
    # variant's latest tool_start; agent_service.proto): they were ~70 % of its bytes.
    if not isinstance(event.payload, ev.CodeDelta):
        out.generation_id, out.event_id = event.generation_id, event.event_id
    # Unset, not 0, for generation-wide events: 0 would name the first variant.
    if not isinstance(event.payload, GENERATION_WIDE):
        out.variant_index = event.variant_index
    # Most frequent first: a match tries its cases in order.
    match event.payload:
        case ev.CodeDelta(offset, text, path):
            out.code_delta.offset, out.code_delta.text = offset, text
            if path:
                out.code_delta.path = path
        case ev.AssistantDelta(text):
            out.assistant_delta.text = text
        case ev.ThinkingDelta(text):
            out.thinking_delta.text = text
        case ev.ToolStart(name, input):
            out.tool_start.name = name
            out.tool_start.input.CopyFrom(to_struct(input))
        case ev.ToolResult(name, output, ok):
            out.tool_result.name, out.tool_result.ok = name, ok
            out.tool_result.output.CopyFrom(to_struct(output))
        case ev.CodeSnapshot(path, content):
            out.code_snapshot.path, out.code_snapshot.content = path, content
        case ev.Usage() as usage:
            out.usage.CopyFrom(usage_to_proto(usage))
        case ev.Status(text):
            out.status.text = text
        case ev.VariantCount(count, models):
            out.variant_count.count = count
            out.variant_count.models.extend(models)
        case ev.VariantComplete(usage):
            out.variant_complete.usage.CopyFrom(usage_to_proto(usage))
        case ev.Fidelity() as fidelity:
            out.fidelity.CopyFrom(fidelity_to_proto(fidelity))
        case ev.Accessibility() as check:
            out.accessibility.CopyFrom(report_to_proto(check))
        case ev.RefineRound() as refine_round:
            out.refine_round.CopyFrom(_round_to_proto(refine_round))
        case ev.UnrequestedChanges() as changes:
            out.unrequested_changes.CopyFrom(changes_to_proto(changes))
        case ev.VariantError(message):
            out.variant_error.message = message
        case ev.GenerationError(message):
            out.generation_error.message = message
        case ev.GenerationComplete(status):
            out.generation_complete.status = _STATUS[status]
        case unknown:
            assert_never(unknown)
    return out


def _timestamp(seconds: float | None) -> timestamp_pb2.Timestamp | None:
    if seconds is None:
        return None
    stamp = timestamp_pb2.Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


def _files_to_proto(files: tuple[FileState, ...]) -> list[common_pb2.FileState]:
    return [common_pb2.FileState(path=f.path, content=f.content) for f in files]


def run_to_proto(run: RunRecord) -> pb.Generation:
    record = pb.Generation(
        generation_id=run.generation_id,
        status=_STATUS[run.status],
        started_at=_timestamp(run.started_at),
        finished_at=_timestamp(run.finished_at),
        error=run.error,
    )
    for variant in run.variants:
        record.variants.append(
            pb.VariantRecord(
                variant_index=variant.index,
                model=variant.model,
                status=_STATUS[variant.status],
                error=variant.error,
                code=variant.code,
                usage=usage_to_proto(ev.Usage(variant.usage, variant.cost_usd, variant.priced)),
                tool_calls=[
                    pb.ToolCallRecord(id=t.id, name=t.name, ok=t.ok, duration_ms=t.duration_ms)
                    for t in variant.tool_calls
                ],
                files=_files_to_proto(variant.files),
                fidelity=[fidelity_to_proto(f) for f in variant.fidelity],
                accessibility=[report_to_proto(a) for a in variant.accessibility],
                refine_rounds=[_round_to_proto(r) for r in variant.refine_rounds],
                unrequested_changes=[changes_to_proto(c) for c in variant.unrequested_changes],
            )
        )
    return record


def _round_to_proto(refine_round: ev.RefineRound) -> pb.RefineRound:
    out = pb.RefineRound(round=refine_round.round, rolled_back=refine_round.rolled_back)
    if refine_round.score is not None:
        out.score = refine_round.score
    return out
