"""Fuzzing the running suite: every hostile input gets a clear answer, nothing dies or leaks.

Two campaigns, each against its own set of real processes (`running_processes`):

- WebSocket: >= 2,000 params frames (one socket each: the gateway closes after an
  error) — non-JSON text, invalid UTF-8, binary frames, JSON that is not an object,
  JSON too deep or with numbers too long to hold, upstream-shaped params with hostile
  values in any field, and resumes of made-up generations.
- gRPC: >= 2,000 requests to the agent (GenerateCode with hostile fields,
  Watch/Get/CancelGeneration with made-up ids, random and mutated protobuf bytes) and
  >= 2,000 to a tool worker (ExecuteTool with random names, ids, arguments, files and
  contexts, and random bytes).

The oracle is coarse on purpose: it does not know which inputs the validators accept
(that is their own tests' business, and a second copy of the rules here would have to
change with every rule). It asks that each input gets a well-formed answer: on the
WebSocket an `error` frame with a message, last, then close 4332, or a generation that
closes 1000 with every variant ended; over gRPC a client-error status (INVALID_ARGUMENT
with field violations when the request decoded, NOT_FOUND, ALREADY_EXISTS) with a
message, or a well-formed result. Problems are recorded rather than raised, so one run
reports every kind of failure, each with the smallest input that showed it.

After a campaign: every process is alive, health says SERVING, an ordinary generation
still works, no service logged an error (an exception escaping a handler is logged at
error level), and each process's RSS is back near the baseline measured after a warm-up.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.message import DecodeError
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.tools.v1 import tool_service_pb2 as tpb

from services.common.errors import bad_request_violations
from services.common.grpc_server import CHANNEL_OPTIONS
from tests.e2e.fuzz_inputs import (
    AGENT,
    FIELD_CHECKED,
    KNOWN_TOOLS,
    REQUEST_TYPES,
    STREAMING,
    TOOLS,
    RpcCase,
    WsCase,
    agent_cases,
    tool_cases,
    ws_cases,
)
from tests.e2e.fuzzing import (
    EXCHANGE_TIMEOUT_S,
    Findings,
    clip,
    closed_port,
    closed_port_env,
    draw_and_warm_up,
    error_log_problems,
    health_problems,
    listening_ports,
    memory,
    memory_problems,
    replay,
    retained_bytes,
    run_campaign,
    shape,
)
from tests.processes import Service, running_processes

# About 20-45 s each on two idle cores; the margin is for a CI machine that is busy.
pytestmark = pytest.mark.timeout(300)

WS_FRAMES = 2_000
AGENT_REQUESTS = 2_000
TOOL_REQUESTS = 2_000
# The socket campaign's frames carry up to a few megabytes each and are parsed in threads:
# the gateway's high-water marks settle after a few hundred (its RSS grew 18-31 MiB after
# a warm-up of 150, 4-15 MiB after 600, and no more at 5,000 frames than at 2,000).
WS_WARM_UP = 600
# The gRPC cases carry up to a megabyte of garbage each, and the allocators' high-water
# marks (not a leak) only settle after many of them: a longer warm-up there, so "back to
# the baseline" compares steady state with steady state. It sends the campaign's own
# first inputs (`draw_and_warm_up`), which are then sent again with the rest.
GRPC_WARM_UP = 1_000
APP_ERROR = 4332
# Transport internals and crash traces: never a clear error for a person.
UNCLEAR = ("Traceback", "RESOURCE_EXHAUSTED", "Stream removed", "INTERNAL:", "UNKNOWN:")


def clear(message: object) -> str | None:
    """None when `message` is text a person can act on, else what is wrong with it."""
    if not isinstance(message, str) or not message.strip():
        return "no message"
    marker = next((m for m in UNCLEAR if m in message), None)
    return None if marker is None else f"unclear message {shape(message)!r}"


# ---------------------------------------------------------------------------------------
# WebSocket: exchange and the coarse judge


@dataclass
class WsSeen:
    frames: list[dict[str, Any]] = field(default_factory=list)
    close_code: int | None = None
    problem: str | None = None


async def exchange(session: aiohttp.ClientSession, url: str, case: WsCase) -> WsSeen:
    seen = WsSeen()
    opcode = aiohttp.WSMsgType.TEXT if case.opcode == "text" else aiohttp.WSMsgType.BINARY
    try:
        async with asyncio.timeout(EXCHANGE_TIMEOUT_S):
            async with session.ws_connect(url, max_msg_size=0) as ws:
                await ws.send_frame(case.data, opcode)
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue
                    try:
                        decoded = json.loads(message.data)
                    except json.JSONDecodeError:
                        seen.problem = f"a frame that is not JSON: {shape(message.data)!r}"
                        continue
                    if isinstance(decoded, dict) and isinstance(decoded.get("type"), str):
                        seen.frames.append(decoded)
                    else:
                        seen.problem = f"a frame without a type: {shape(message.data)!r}"
                seen.close_code = ws.close_code
    except TimeoutError:
        seen.problem = f"no close within {EXCHANGE_TIMEOUT_S:.0f} s (hang)"
    except (aiohttp.ClientError, ConnectionError) as exc:
        seen.problem = f"connection failed: {type(exc).__name__}"
    return seen


def ws_variants(seen: WsSeen) -> int:
    first = seen.frames[0] if seen.frames else {}
    value = str(first.get("value"))
    return int(value) if first.get("type") == "variantCount" and value.isdigit() else 0


def judge_ws(seen: WsSeen) -> tuple[str, str | None]:
    """(the outcome, None or what was wrong): refused with a clear error, or generated."""
    if seen.problem is not None:
        return "broken", seen.problem
    kinds = [f["type"] for f in seen.frames]
    summary = f"close {seen.close_code}, frames {kinds[-4:]}"
    if seen.close_code == APP_ERROR:
        if not kinds or kinds[-1] != "error" or kinds.count("error") != 1:
            return "refused", f"close 4332 not after exactly one, last, error frame: {summary}"
        unclear = clear(seen.frames[-1].get("value"))
        return "refused", None if unclear is None else f"error frame with {unclear}"
    if seen.close_code != 1000:
        return "broken", f"neither an error and 4332 nor a generation: {summary}"
    count = ws_variants(seen)
    if count < 1 or "error" in kinds:
        return "generated", f"closed 1000 without a variant count or with an error: {summary}"
    for variant in range(count):
        ends = [
            f
            for f in seen.frames
            if f.get("variantIndex") == variant and f["type"] in ("variantComplete", "variantError")
        ]
        if len(ends) != 1:
            return "generated", f"variant {variant} ended {len(ends)} times: {summary}"
        if ends[0]["type"] == "variantError" and (unclear := clear(ends[0].get("value"))):
            return "generated", f"variantError with {unclear}"
    return "generated", None


async def test_fuzz_websocket_params_frames(tmp_path: Path) -> None:
    findings = Findings()
    retained = 0

    async with (
        closed_port() as port,
        running_processes(tmp_path / "data", closed_port_env(port)) as suite,
        aiohttp.ClientSession() as session,
    ):

        async def check(case: WsCase) -> None:
            nonlocal retained
            seen = await exchange(session, suite.ws_url, case)
            outcome, problem = judge_ws(seen)
            findings.outcomes[outcome] += 1
            retained += retained_bytes(case.data, ws_variants(seen))
            if problem is not None:
                findings.add(problem, case.describe())

        await run_campaign(ws_cases, WS_WARM_UP, 20_261, check)
        before = memory(suite)
        findings.outcomes.clear()
        retained = 0
        sent = await run_campaign(ws_cases, WS_FRAMES, 4_332, check)
        after = memory(suite)
        problems = [
            *findings.report(),
            *await health_problems(suite),
            *error_log_problems(suite),
            *memory_problems(before, after, {"agent": retained}),
        ]

    assert sent >= WS_FRAMES
    # Both kinds of answer were exercised, so the campaign reached past the first checks.
    assert findings.outcomes["refused"] >= WS_FRAMES // 4, findings.outcomes
    assert findings.outcomes["generated"] >= 20, findings.outcomes
    assert not problems, "\n".join([*problems, f"outcomes: {dict(findings.outcomes)}"])


# ---------------------------------------------------------------------------------------
# gRPC: call and the coarse judge


@dataclass
class RpcSeen:
    code: grpc.StatusCode
    details: str = ""
    fields: list[str] = field(default_factory=list)
    responses: list[bytes] = field(default_factory=list)


def _same(data: bytes) -> bytes:
    return data


async def call(channel: grpc.aio.Channel, prefix: str, case: RpcCase) -> RpcSeen:
    """Sends the payload as it is, so malformed protobuf reaches the server."""
    seen = RpcSeen(grpc.StatusCode.OK)
    method = prefix + case.method
    try:
        if case.method in STREAMING:
            stream = channel.unary_stream(
                method, request_serializer=_same, response_deserializer=_same
            )(case.payload, timeout=EXCHANGE_TIMEOUT_S)
            async for response in stream:
                seen.responses.append(response)
        else:
            unary = channel.unary_unary(
                method, request_serializer=_same, response_deserializer=_same
            )
            seen.responses.append(await unary(case.payload, timeout=EXCHANGE_TIMEOUT_S))
    except grpc.aio.AioRpcError as exc:
        seen.code = exc.code()
        seen.details = exc.details() or ""
        if seen.code == grpc.StatusCode.INVALID_ARGUMENT:
            seen.fields = [v.field for v in bad_request_violations(exc)]
    return seen


def messages(method: str, seen: RpcSeen) -> list[Any]:
    """The streamed responses, decoded; each carries `repeated GenerationEvent events`."""
    output = pb.DESCRIPTOR.services_by_name["AgentService"].methods_by_name[method].output_type
    message_type: Any = message_factory.GetMessageClass(output)
    return [message_type.FromString(data) for data in seen.responses]


def events(method: str, seen: RpcSeen) -> list[Any]:
    return [event for message in messages(method, seen) for event in message.events]


def rpc_variants(seen: RpcSeen) -> int:
    streamed = events("GenerateCode", seen) if seen.code == grpc.StatusCode.OK else []
    counts = [e.variant_count.count for e in streamed if e.HasField("variant_count")]
    return counts[0] if counts else 0


CLIENT_ERRORS = (
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,  # random bytes can decode to one generation id twice
)


def judge_rpc(case: RpcCase, seen: RpcSeen) -> tuple[str, str | None]:
    """(the outcome, None or what was wrong): refused clearly, or a well-formed result."""
    where = case.method
    if seen.code != grpc.StatusCode.OK:
        if seen.code not in CLIENT_ERRORS:
            return "broken", f"{where}: {seen.code.name} {shape(seen.details)!r}"
        if unclear := clear(seen.details):
            return "refused", f"{where}: {seen.code.name} with {unclear}"
        checked = seen.code == grpc.StatusCode.INVALID_ARGUMENT and where in FIELD_CHECKED
        if checked and _decodes(case) and not (seen.fields and all(map(str.strip, seen.fields))):
            return "refused", f"{where}: INVALID_ARGUMENT without field violations"
        return "refused", None
    try:
        if case.method in STREAMING:
            streamed = events(case.method, seen)
            sequences = [e.sequence for e in streamed]
            if not all(message.events for message in messages(case.method, seen)):
                return "accepted", f"{where}: a response message without events"
            if not streamed or not streamed[-1].HasField("generation_complete"):
                return "accepted", f"{where}: a stream that does not end with generation_complete"
            if sequences != list(range(sequences[0], sequences[0] + len(sequences))):
                return "accepted", f"{where}: sequence numbers with gaps"
            return "accepted", None
        if case.method == "ExecuteTool":
            response = tpb.ExecuteToolResponse.FromString(seen.responses[0])
            error = response.result.fields.get("error")
            if not response.ok and clear(error.string_value if error else None):
                return "accepted", "ExecuteTool: ok=False without a clear error"
        return "accepted", None
    except DecodeError:
        return "broken", f"{where}: a response that does not decode"


def _decodes(case: RpcCase) -> bool:
    try:
        REQUEST_TYPES[case.method].FromString(case.payload)
    except DecodeError:
        return False
    return True


async def metrics_tool_labels(service: Service) -> set[str]:
    """The `tool` label values of the tool worker's execution-time histogram."""
    ports = listening_ports(service.process.pid) - {service.port}
    assert len(ports) == 1, f"cannot tell the metrics port of {service.name}: {ports}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{ports.pop()}/metrics") as response:
            text = await response.text()
    found = (
        re.search(r'tool="((?:[^"\\]|\\.)*)"', line)
        for line in text.splitlines()
        if line.startswith("s2c_tool_execution_seconds_count{")
    )
    return {match.group(1) for match in found if match}


async def test_fuzz_grpc_requests(tmp_path: Path) -> None:
    findings = Findings()
    retained = 0

    async with (
        closed_port() as port,
        running_processes(tmp_path / "data", closed_port_env(port)) as suite,
        grpc.aio.insecure_channel(
            f"127.0.0.1:{suite.agent.port}", options=list(CHANNEL_OPTIONS)
        ) as agent,
        grpc.aio.insecure_channel(
            f"127.0.0.1:{suite.tools.port}", options=list(CHANNEL_OPTIONS)
        ) as tools,
    ):

        def checker(
            channel: grpc.aio.Channel, prefix: str
        ) -> Callable[[RpcCase], Coroutine[Any, Any, None]]:
            async def check(case: RpcCase) -> None:
                nonlocal retained
                seen = await call(channel, prefix, case)
                outcome, problem = judge_rpc(case, seen)
                findings.outcomes[f"{case.method} {outcome}"] += 1
                if case.method == "GenerateCode":
                    retained += retained_bytes(case.payload, rpc_variants(seen))
                if problem is not None:
                    findings.add(problem, case.describe())

            return check

        check_agent, check_tools = checker(agent, AGENT), checker(tools, TOOLS)
        agent_inputs = await draw_and_warm_up(
            agent_cases, AGENT_REQUESTS, GRPC_WARM_UP, 51, check_agent
        )
        tool_inputs = await draw_and_warm_up(
            tool_cases, TOOL_REQUESTS, GRPC_WARM_UP, 52, check_tools
        )
        before = memory(suite)
        findings.outcomes.clear()
        retained = 0
        agent_sent = await replay(agent_inputs, check_agent)
        tools_sent = await replay(tool_inputs, check_tools)
        after = memory(suite)
        labels = await metrics_tool_labels(suite.tools)
        problems = [
            *findings.report(),
            *await health_problems(suite),
            *error_log_problems(suite),
            *memory_problems(before, after, {"agent": retained}),
        ]
    # One series per real tool (and at most one for "not a tool"): a series per name a
    # caller made up is memory and /metrics output that grow without bound.
    made_up = labels - set(KNOWN_TOOLS)
    if len(made_up) > 1:
        problems.append(
            f"s2c_tool_execution_seconds has {len(made_up)} series for names that are not "
            f"tools (e.g. {clip(min(made_up, key=len), 60)}): unbounded label cardinality"
        )

    assert agent_sent >= AGENT_REQUESTS
    assert tools_sent >= TOOL_REQUESTS
    # Both kinds of answer were exercised on each service.
    for outcome in ("GenerateCode refused", "GenerateCode accepted", "ExecuteTool accepted"):
        assert findings.outcomes[outcome] >= 20, findings.outcomes
    assert not problems, "\n".join([*problems, f"outcomes: {dict(findings.outcomes)}"])
