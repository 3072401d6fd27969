"""The /generate-code WebSocket: one generation (or a resumed one) per socket.

Protocol extension for resumable clients (our UI uses it, `static/js/protocol.js`,
to re-attach after a dropped connection; the upstream UI never does and is
unaffected): a params frame with `"resumable": true` gets a first frame
`{"type": "generation", "value": <id>}` and a `seq` on every frame (a code frame's is
that of the latest event in its code). Such a client that lost its socket re-attaches
by sending, as its only frame, `{"resumeGenerationId": <id>, "afterSequence": <highest
seq seen>}`: it gets the whole code of every variant at that sequence (never older than
the code it holds), then every frame after that sequence. A dropped
resumable socket leaves its generation running: the agent keeps it for its resume grace
(S2C_RESUME_GRACE_S) for a re-attach through any gateway; a 4333 close, or any close
of a non-resumable socket (which nobody can resume), cancels it at once.

Our UI also asks for the fidelity scores (`"scoreFidelity": true`, in its params and in
every resume): its socket closes after the `fidelity` frames. Any other socket (the
upstream UI's) is not scored unless S2C_SCORE_UNASKED says so, and closes 1000 as soon as
every variant ended with one completed, never waiting for a score (relay.py).

Our UI also asks for append-only code (`"codeStream": "append"`, in its params and in
every resume): `appendCode` frames carry only new text, and a whole `setCode` goes out
only where the file the client holds is replaced (frames.py).

A stream (resumed or not) ends the way its generation ended: completed — the
variants' frames, then 1000; failed — an `error` frame, then 4332; cancelled (a
4333 elsewhere, CancelGeneration, or a dropped socket nobody resumed in time) — a
`variantError` "The generation was cancelled." for each variant that had not
finished, then 4333, the code both UIs show as a cancel; interrupted (the agent
stopped mid-generation) — an `error` frame saying so, then 4332. A generation the
agent no longer keeps in memory resumes from its run record: each variant's final
code and outcome, then the same ending.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

import grpc
from aiohttp import WSMsgType, web
from s2c.agent.v1 import agent_service_pb2 as pb

from services.common.tracing import outgoing_metadata, tracer
from services.gateway.access import FrameLimitedWebSocketResponse
from services.gateway.agents import (
    GENERATION_ID_HEADER,
    Agent,
    AgentPool,
    OwnerUnreachable,
    UnknownOwner,
)
from services.gateway.bodies import TooManyValues, parse_json
from services.gateway.drain import RESTARTING
from services.gateway.frames import FrameBuilder, frame
from services.gateway.keys import (
    AGENTS_KEY,
    LIMITER_KEY,
    METRICS_KEY,
    SETTINGS_KEY,
    SOCKETS_KEY,
)
from services.gateway.limits import ClientLimiter, client_identity
from services.gateway.metrics import GatewayMetrics
from services.gateway.params import (
    ParamsError,
    appends_code,
    asks_for_scores,
    kind_of,
    parse_params,
)
from services.gateway.preview_policy import PreviewPolicyConfig
from services.gateway.relay import (
    AGENT_RESTARTING,
    APP_ERROR,
    TRY_AGAIN_LATER,
    USER_CANCEL,
    EventStream,
    Relay,
)
from services.gateway.settings import GatewaySettings

log = logging.getLogger(__name__)


def asset_base_url(request: web.Request) -> str:
    """`scheme://host` as the browser sees us (proxy and tunnel aware, like upstream)."""
    host = request.headers.get("X-Forwarded-Host") or request.headers.get("Host") or request.host
    host = host.split(",")[0].strip()
    proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip()
    if not proto:
        proto = "https" if request.secure else "http"
    proto = {"wss": "https", "ws": "http"}.get(proto, proto)
    return f"{proto}://{host}"


async def _fail(ws: web.WebSocketResponse, message: str) -> None:
    if ws.closed:
        return
    # The browser may be gone already; then there is nobody left to tell.
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.send_str(json.dumps(frame("error", None, value=message)))
    await ws.close(code=APP_ERROR)


# The client went away before its params arrived: nothing can be sent back.
_CLIENT_LEFT = object()


async def _read_params(
    ws: web.WebSocketResponse, settings: GatewaySettings, limiter: ClientLimiter, client: str
) -> Any:
    """The first frame as a JSON object, `_CLIENT_LEFT`, or ParamsError saying what is wrong.

    While it waits the socket holds one of its client's waiting places; a newer socket of
    the same client may evict it (`ClientLimiter.wait`), which ends the wait at once.
    """
    evicted = False
    try:
        async with asyncio.timeout(settings.params_timeout_s) as deadline:

            def evict() -> None:
                nonlocal evicted
                if not deadline.expired():  # else it is ending anyway, on its own timeout
                    evicted = True
                    deadline.reschedule(asyncio.get_running_loop().time())

            place = limiter.wait(client, evict)
            try:
                message = await ws.receive()
            finally:
                limiter.done_waiting(place)
    except TimeoutError:
        if evicted:
            raise ParamsError(
                f"Closed to make room: more than {limiter.max_waiting} connections from "
                "this client were waiting to send their params (S2C_MAX_WAITING_PER_CLIENT), "
                "and this was the oldest. Send the params right after connecting."
            ) from None
        raise ParamsError(
            f"No params received within {settings.params_timeout_s:g} s: "
            "send the generation params as the first frame."
        ) from None
    if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
        return _CLIENT_LEFT
    if message.type == WSMsgType.ERROR:
        raise ParamsError(f"Invalid params: the WebSocket failed ({message.data})")
    if message.type != WSMsgType.TEXT:
        raise ParamsError(
            f"Invalid params: expected a JSON text frame, got a {message.type.name.lower()} frame"
        )
    try:
        params = await parse_json(message.data, clean=True)
    except json.JSONDecodeError as exc:
        raise ParamsError(
            f"Invalid params: not valid JSON ({exc.msg} at position {exc.pos})"
        ) from None
    except TooManyValues as exc:
        raise ParamsError(f"Invalid params: {exc}") from None
    except (ValueError, RecursionError):
        # Numbers too long to convert, or nesting too deep for the parser.
        raise ParamsError(
            "Invalid params: the JSON is too deeply nested or has a huge number"
        ) from None
    if not isinstance(params, dict):
        raise ParamsError(f"Invalid params: expected a JSON object, got {kind_of(params)}")
    return params


async def generate_code(request: web.Request) -> web.StreamResponse:
    sockets = request.app[SOCKETS_KEY]
    if sockets.draining:
        # Before the upgrade: the client's reconnect logic tries again, elsewhere.
        return web.json_response({"detail": RESTARTING}, status=503, headers={"Retry-After": "1"})
    settings = request.app[SETTINGS_KEY]
    ws = FrameLimitedWebSocketResponse(max_msg_size=settings.access.max_frame_bytes, heartbeat=20.0)
    await ws.prepare(request)
    with sockets.held(ws):
        return await _generate_code(request, ws, settings)


async def _generate_code(
    request: web.Request, ws: web.WebSocketResponse, settings: GatewaySettings
) -> web.StreamResponse:
    limiter = request.app[LIMITER_KEY]
    metrics = request.app[METRICS_KEY]
    client = client_identity(request, settings.access)
    # A socket waiting for its params holds no generation slot, only one of a few
    # waiting places, so idle sockets cannot lock their client out of generating.
    try:
        params = await _read_params(ws, settings, limiter, client)
    except ParamsError as exc:
        await _refuse(ws, metrics, "invalid_params", str(exc))
        return ws
    if params is _CLIENT_LEFT:
        log.info("browser left before sending params", extra={"close_code": ws.close_code})
        metrics.connections.labels("left_before_params").inc()
        return ws
    refusal = limiter.try_start(client)
    if refusal is not None:
        await _refuse(ws, metrics, "refused", refusal.message)
        return ws
    try:
        # The trace of this browser generation; its context rides the gRPC metadata.
        with tracer("s2c.gateway").start_as_current_span("generate-code"):
            return await _generate(request, ws, settings, params)
    finally:
        limiter.finish(client)


async def _refuse(
    ws: web.WebSocketResponse, metrics: GatewayMetrics, outcome: str, message: str
) -> None:
    log.info("generation refused", extra={"outcome": outcome, "reason": message[:300]})
    metrics.connections.labels(outcome).inc()
    await _fail(ws, message)


async def _generate(
    request: web.Request,
    ws: web.WebSocketResponse,
    settings: GatewaySettings,
    params: dict[str, Any],
) -> web.WebSocketResponse:
    metrics = request.app[METRICS_KEY]
    call: EventStream
    resumed = "resumeGenerationId" in params
    try:
        # A resume names its code stream again: it is the socket's, not the generation's;
        # so is waiting for the scores.
        append = appends_code(params)
        scores = asks_for_scores(params)
        if resumed:
            generation_id, after = _resume_params(params)
            agent = await request.app[AGENTS_KEY].reachable_owner(generation_id)
            call = agent.stub.WatchGeneration(
                pb.WatchGenerationRequest(generation_id=generation_id),
                metadata=outgoing_metadata(),
            )
            resumable, skip_until = True, after
            # If it is down, the browser learns which agent holds its generation.
            agent_addr = f"{agent.addr} (the agent that holds this generation)"
        else:
            generate_request = parse_params(
                params,
                asset_base_url=asset_base_url(request),
                max_files=settings.max_project_files,
            )
            # Scored only for a client that shows the scores, or when the operator wants
            # them in the run record anyway (docs/fidelity.md).
            generate_request.score_fidelity = scores or settings.score_unasked
            if not append:
                # A setCode client sees new code only once it grew by `min_chars`: the
                # agent sends code in such batches, so code the browser would not show
                # yet wakes neither service (docs/architecture.md, "Code batches").
                generate_request.code_batch_chars = settings.preview_min_chars
            agent, call, generation_id = await _admitted(request.app[AGENTS_KEY], generate_request)
            admitted = bool(generation_id)
            # A refused generation has no id to resume: the relay reports the refusal.
            resumable, skip_until = admitted and params.get("resumable") is True, 0
            agent_addr = agent.addr
    except ParamsError as exc:
        await _refuse(ws, metrics, "invalid_params", str(exc))
        return ws
    except OwnerUnreachable as exc:
        log.info("resume deferred: owner unreachable", extra={"reason": str(exc)[:300]})
        metrics.connections.labels("retry_later").inc()
        await ws.close(code=TRY_AGAIN_LATER, message=AGENT_RESTARTING.encode())
        return ws
    except UnknownOwner as exc:
        await _refuse(ws, metrics, "invalid_params", f"Invalid resume: {exc}")
        return ws

    if resumable and skip_until == 0:
        await ws.send_str(json.dumps(frame("generation", None, value=generation_id)))
    preview = PreviewPolicyConfig(
        min_chars=settings.preview_min_chars,
        min_interval_s=settings.preview_min_interval_s,
        max_bytes_per_s=settings.preview_max_bytes_per_s,
        # One knob for both streams: the least time between two code frames.
        append_interval_s=settings.preview_min_interval_s,
    )
    relay = Relay(
        ws,
        call,
        FrameBuilder(preview, time.monotonic, resumable=resumable, append=append, resumed=resumed),
        agent_addr,
        metrics,
        skip_until=skip_until,
        send_timeout_s=settings.send_timeout_s,
        wait_for_scores=scores,
        resumable=resumable,
    )
    request.app[SOCKETS_KEY].relaying(ws, relay, resumable=resumable)
    try:
        await relay.run()
        metrics.connections.labels(relay.outcome).inc()
        # A socket closed as its options completed (`closed_early`) asked for nothing
        # more: its generation finishes on the agent (scores for the run record, if the
        # operator wants them), which keeps it for its resume grace.
        if relay.outcome in ("client_closed", "drained") and (
            relay.client_close_code == USER_CANCEL or not resumable
        ):
            # Asked to cancel, or nobody can ever resume it: stop the work now. A resumable
            # socket that went away only ends its stream; the agent keeps the generation.
            with contextlib.suppress(grpc.aio.AioRpcError):
                await agent.stub.CancelGeneration(
                    pb.CancelGenerationRequest(generation_id=generation_id),
                    timeout=5,
                    metadata=outgoing_metadata(),
                )
    finally:
        await relay.stop()
        call.cancel()
    return ws


# What an agent answers when it did not take a generation: another may.
_TRY_NEXT = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)


async def _admitted(
    pool: AgentPool, request: pb.GenerateCodeRequest
) -> tuple[Agent, grpc.aio.UnaryStreamCall[Any, pb.GenerateCodeResponse], str]:
    """The call of the first agent, in turn, that admits the generation, and the id that
    agent gave it (its name first: agents.py); when none does, the last refusal (which
    the relay turns into an `error` frame) and ""."""
    for agent in pool.in_turn():
        call = agent.stub.GenerateCode(request, metadata=outgoing_metadata())
        # An agent sends its headers as it admits a generation; a refusal is a call that
        # ended without them (its status came first), so trying the next one is safe.
        headers = await call.initial_metadata()
        if not call.done() or (code := await call.code()) not in _TRY_NEXT:
            return agent, call, _generation_id(headers)
        details = (await call.details() or "")[:300]
        log.info(
            "agent did not take the generation",
            extra={"agent": agent.addr, "code": code.name, "details": details},
        )
    return agent, call, ""


def _generation_id(headers: Any) -> str:
    """The id in an admitting agent's response headers ("" if it sent none: the call
    failed before the agent admitted it, and the relay reports that)."""
    for key, value in headers or ():
        if key == GENERATION_ID_HEADER:
            return value if isinstance(value, str) else value.decode()
    return ""


def _resume_params(params: dict[str, Any]) -> tuple[str, int]:
    generation_id = params.get("resumeGenerationId")
    after = params.get("afterSequence", 0)
    if not isinstance(generation_id, str) or not generation_id:
        raise ParamsError("Invalid resume: resumeGenerationId must be a non-empty string")
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise ParamsError("Invalid resume: afterSequence must be a non-negative integer")
    return generation_id, after
