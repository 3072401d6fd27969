"""The gRPC servers' one lifecycle: in-flight work finishes within the grace, then the
resources close, each once, in reverse order of opening."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common.grpc_server import (
    RunningServer,
    max_connection_age_options,
    start_server,
)
from services.common.listen import ListenError

WAIT = "/test.Lifecycle/Wait"


class Recorder:
    """One server with a `Wait` RPC and a drain that both wait for `release`, and two
    resources; every step is appended to `events`."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.entered = asyncio.Event()
        self.draining = asyncio.Event()
        self.release = asyncio.Event()

    def register(self, server: grpc.aio.Server) -> Sequence[str]:
        async def wait(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            self.entered.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.events.append("call cancelled")
                raise
            self.events.append("call finished")
            return b"done"

        handler: grpc.RpcMethodHandler[bytes, bytes] = grpc.unary_unary_rpc_method_handler(wait)
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("test.Lifecycle", {"Wait": handler})]
        )
        return ["test.Lifecycle"]

    async def drain(self, grace_s: float) -> None:
        self.events.append(f"drain {grace_s}")
        self.draining.set()
        try:
            await asyncio.wait_for(self.release.wait(), grace_s)
        except TimeoutError:
            self.events.append("drain cut")
            return
        self.events.append("drain finished")

    def resources(self) -> AsyncExitStack:
        stack = AsyncExitStack()
        for name in ("store", "tools"):  # opened in this order

            async def close(name: str = name) -> None:
                self.events.append(f"close {name}")

            stack.push_async_callback(close)
        return stack

    async def start(self) -> RunningServer:
        return await start_server(
            "127.0.0.1:0", self.register, resources=self.resources(), drain=self.drain
        )


async def call_wait(port: int) -> bytes:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        wait: Any = channel.unary_unary(WAIT)
        return bytes(await wait(b""))


async def health_of(port: int) -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        answer = await stub.Check(health_pb2.HealthCheckRequest(service="test.Lifecycle"))
        return int(answer.status)


async def test_resources_close_once_after_the_running_call_and_the_drain() -> None:
    recorder = Recorder()
    running = await recorder.start()
    assert await health_of(running.port) == health_pb2.HealthCheckResponse.SERVING
    call = asyncio.create_task(call_wait(running.port))
    await recorder.entered.wait()
    stopping = asyncio.create_task(running.stop(30.0))
    await recorder.draining.wait()
    # Stopping, but the call and the drain still run: nothing is closed yet.
    assert recorder.events == ["drain 30.0"]
    assert await running.health.Check(
        health_pb2.HealthCheckRequest(service="test.Lifecycle"), None
    ) == health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.NOT_SERVING)
    recorder.release.set()
    assert await call == b"done"  # finished within the grace, not cancelled
    await stopping
    await running.stop(30.0)  # a second stop closes nothing again
    first, last = recorder.events[:3], recorder.events[3:]
    assert sorted(first) == ["call finished", "drain 30.0", "drain finished"]
    assert last == ["close tools", "close store"]


async def test_after_the_grace_the_call_is_cancelled_and_resources_still_close_once() -> None:
    recorder = Recorder()
    running = await recorder.start()
    call = asyncio.create_task(call_wait(running.port))
    await recorder.entered.wait()
    # Both stops share one shutdown: the second waits for the first.
    await asyncio.gather(running.stop(0.05), running.stop(0.05))
    with pytest.raises(grpc.aio.AioRpcError):
        await call
    assert recorder.events[-2:] == ["close tools", "close store"]
    assert sorted(recorder.events[:-2]) == ["call cancelled", "drain 0.05", "drain cut"]


async def test_a_second_server_on_a_taken_port_refuses_to_start() -> None:
    first = Recorder()
    running = await start_server("127.0.0.1:0", first.register, resources=first.resources())
    try:
        second = Recorder()
        # With gRPC's default SO_REUSEPORT this started and took a share of the calls.
        taken = re.escape(f"127.0.0.1:{running.port}: the port is taken")
        with pytest.raises(ListenError, match=taken):
            await start_server(
                f"127.0.0.1:{running.port}", second.register, resources=second.resources()
            )
        assert second.events == ["close tools", "close store"]
    finally:
        await running.stop(0)


async def test_a_failed_start_closes_what_was_opened() -> None:
    recorder = Recorder()
    with pytest.raises(ListenError, match=re.escape("cannot listen on 256.0.0.1:0")):
        await start_server("256.0.0.1:0", recorder.register, resources=recorder.resources())
    assert recorder.events == ["close tools", "close store"]


async def test_past_its_age_a_connection_takes_no_new_calls_but_finishes_the_running_one() -> None:
    """What lets workers added behind a DNS name get calls: the server ends each connection
    after its age (GOAWAY), the client connects afresh for new calls (resolving the name
    again), and a call still running on the old connection finishes within the grace."""
    release, entered = asyncio.Event(), asyncio.Event()

    def register(server: grpc.aio.Server) -> Sequence[str]:
        async def wait(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            entered.set()
            await release.wait()
            return b"done"

        async def peer(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            return context.peer().encode()

        handlers: dict[str, grpc.RpcMethodHandler[bytes, bytes]] = {
            "Wait": grpc.unary_unary_rpc_method_handler(wait),
            "Peer": grpc.unary_unary_rpc_method_handler(peer),
        }
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("test.Age", handlers)]
        )
        return ["test.Age"]

    running = await start_server(
        "127.0.0.1:0", register, options=max_connection_age_options(0.2, 60.0)
    )
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            wait: Any = channel.unary_unary("/test.Age/Wait")
            peer: Any = channel.unary_unary("/test.Age/Peer")
            first = await peer(b"")
            call = asyncio.ensure_future(wait(b""))
            await entered.wait()
            # The age passes: the channel leaves READY when the server's GOAWAY arrives.
            await asyncio.wait_for(
                channel.wait_for_state_change(grpc.ChannelConnectivity.READY), 30
            )
            second = await peer(b"", wait_for_ready=True)
            assert second != first  # another client port: a new connection
            assert not call.done()  # the old connection still carries the running call
            release.set()
            assert await call == b"done"
    finally:
        await running.stop(0)


def test_no_age_adds_no_options() -> None:
    assert max_connection_age_options(0, 130) == ()
    assert dict(max_connection_age_options(60, 130)) == {
        "grpc.max_connection_age_ms": 60_000,
        "grpc.max_connection_age_grace_ms": 130_000,
    }
