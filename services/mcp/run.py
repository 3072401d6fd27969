"""One generation over the agent's GenerateCode stream, as an MCP tool call sees it: a
progress message per step, the rendered pages' images, cancellation that reaches the agent."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import grpc
from google.protobuf.json_format import MessageToDict
from mcp.server.mcpserver.exceptions import ToolError
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.errors import bad_request_violations
from services.common.generation_ids import GENERATION_ID_HEADER
from services.mcp.results import status_name

Report = Callable[[str], Awaitable[None]]
CANCEL_TIMEOUT_S = 5.0
# What an agent answers when it did not take a generation: another may.
TRY_NEXT = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)


@dataclass
class Finished:
    """What the stream said that the run record does not keep."""

    generation_id: str = ""
    # Per option, the data URL of its latest `screenshot_preview` (the rendered page).
    previews: dict[int, str] = field(default_factory=dict)


async def run_generation(
    agents: list[pb_grpc.AgentServiceAsyncStub], request: pb.GenerateCodeRequest, report: Report
) -> Finished:
    """Streams the generation on the first of `agents` that admits it to its end,
    reporting each step; a cancelled caller (an MCP `notifications/cancelled`) cancels
    the generation on the agent before it returns."""
    finished = Finished(generation_id=request.generation_id)
    stub = agents[0]
    call: grpc.aio.UnaryStreamCall[pb.GenerateCodeRequest, pb.GenerateCodeResponse] | None = None
    try:
        stub, call, finished.generation_id = await _admitted(agents, request)
        async for response in call:
            for event in response.events:
                finished.generation_id = finished.generation_id or event.generation_id
                _note_preview(event, finished)
                message = describe(event)
                if message is not None:
                    await report(message)
    except asyncio.CancelledError:
        # Dropping the stream already stops the generation; saying so explicitly also
        # covers another watcher keeping it alive (as `s2c generate` does).
        if call is not None:
            call.cancel()
        if finished.generation_id:
            with anyio.CancelScope(shield=True):
                await cancel_generation(stub, finished.generation_id)
        raise
    except grpc.aio.AioRpcError as exc:
        raise ToolError(rpc_error_text(exc)) from None
    if not finished.generation_id:
        raise ToolError("the agent ended the stream before the generation started")
    return finished


async def _admitted(
    agents: list[pb_grpc.AgentServiceAsyncStub], request: pb.GenerateCodeRequest
) -> tuple[
    pb_grpc.AgentServiceAsyncStub,
    grpc.aio.UnaryStreamCall[pb.GenerateCodeRequest, pb.GenerateCodeResponse],
    str,
]:
    """The call of the first agent, in turn, that admits the generation, and the id it
    gave it; when none does, the last refusal, which the stream then raises. As the
    gateway does: an agent sends its headers as it admits a generation, so a call that
    ended without them was refused before anything ran, and the next agent may take it."""
    for stub in agents:
        call = stub.GenerateCode(request)
        try:
            headers = await call.initial_metadata()
        except asyncio.CancelledError:
            call.cancel()  # not yet the caller's to cancel: it has no call until we return
            raise
        if not call.done() or await call.code() not in TRY_NEXT:
            break
    generation_id = next(
        (str(v) for k, v in headers or () if k == GENERATION_ID_HEADER), request.generation_id
    )
    return stub, call, generation_id


async def cancel_generation(stub: pb_grpc.AgentServiceAsyncStub, generation_id: str) -> bool:
    try:
        answer = await stub.CancelGeneration(
            pb.CancelGenerationRequest(generation_id=generation_id), timeout=CANCEL_TIMEOUT_S
        )
    except grpc.aio.AioRpcError:
        return False
    return answer.cancelled


def describe(event: pb.GenerationEvent) -> str | None:
    """The progress message of a step worth telling a waiting agent; None for the rest
    (streamed text and code, usage)."""
    kind = event.WhichOneof("payload")
    option = f"option {event.variant_index}" if event.HasField("variant_index") else ""
    if kind == "variant_count":
        models = ", ".join(event.variant_count.models)
        # The id first, so a caller that cancels still knows which record to read.
        return (
            f"generation {event.generation_id}: {event.variant_count.count} option(s) on {models}"
        )
    if kind == "status":
        return f"{option}: {event.status.text}"
    if kind == "tool_start":
        return f"{option}: {event.tool_start.name} started"
    if kind == "tool_result":
        outcome = "done" if event.tool_result.ok else "failed"
        return f"{option}: {event.tool_result.name} {outcome}"
    if kind == "variant_complete":
        return f"{option}: complete"
    if kind == "variant_error":
        return f"{option}: failed: {event.variant_error.message}"
    if kind == "fidelity":
        score = event.fidelity
        if score.unavailable_reason:
            return f"{option}: no fidelity score ({score.unavailable_reason})"
        return f"{option}: fidelity block match {score.block_match:.2f}, visual {score.visual:.2f}"
    if kind == "generation_error":
        return f"generation failed: {event.generation_error.message}"
    if kind == "generation_complete":
        return f"generation {status_name(event.generation_complete.status)}"
    return None


def _note_preview(event: pb.GenerationEvent, finished: Finished) -> None:
    if event.WhichOneof("payload") != "tool_result":
        return
    result = event.tool_result
    if result.name != "screenshot_preview" or not result.ok:
        return
    output: dict[str, Any] = MessageToDict(result.output)
    shots = output.get("screenshots")
    if isinstance(shots, list) and shots and isinstance(shots[0], dict):
        url = shots[0].get("image_url")
        if isinstance(url, str) and url.startswith("data:image/"):
            finished.previews[event.variant_index] = url


def rpc_error_text(exc: grpc.aio.AioRpcError) -> str:
    """The agent's refusal in words a calling agent can act on: the fields it names."""
    code = exc.code()
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        violations = bad_request_violations(exc)
        if violations:
            return "the agent refused the request: " + "; ".join(
                f"{v.field}: {v.description}" for v in violations
            )
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"the agent is unavailable ({exc.details()}); is the suite running (s2c up)?"
    return f"{code.name}: {exc.details()}"
