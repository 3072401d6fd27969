"""The one bootstrap and lifecycle of the gRPC servers: options, health, reflection, and
a shutdown that closes each service's resources once, after the server has stopped."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import inspect
import logging
import signal
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry

from services.common.listen import ListenError
from services.common.metrics import serve_metrics
from services.common.security import GrpcSecurity, add_port, server_interceptors

log = logging.getLogger(__name__)

# Screenshots travel as PNG bytes and requests carry screenshots and videos as
# data URLs, so the 4 MiB gRPC default is far too small.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

SERVER_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    # Generations stream for minutes; keepalive notices dead peers behind NATs
    # and load balancers that would otherwise hold the stream open forever.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
    # gRPC sets SO_REUSEPORT by default: a second server on a taken port would start and
    # take a share of the first one's calls. Without it, binding a taken port fails.
    ("grpc.so_reuseport", 0),
)


def max_connection_age_options(age_s: float, grace_s: float) -> tuple[tuple[str, int], ...]:
    """Server options that close each client connection after about `age_s` (gRPC adds
    ±10 % jitter) and let the calls on it run for `grace_s` more before they are cut.

    A client that balances over a DNS name resolves it again when its connection goes
    away, so servers started after it start getting calls. `age_s` 0: connections live on.
    """
    if age_s <= 0:
        return ()
    return (
        ("grpc.max_connection_age_ms", round(age_s * 1000)),
        ("grpc.max_connection_age_grace_ms", round(grace_s * 1000)),
    )


CHANNEL_OPTIONS: tuple[tuple[str, int | str], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)


_UNDECODABLE = object()


class DecodeErrorInterceptor(grpc.aio.ServerInterceptor):
    """Bytes that are not the method's request message get INVALID_ARGUMENT, not UNKNOWN.

    gRPC would otherwise fail inside its own deserializer with no useful status.
    """

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        deserialize = handler.request_deserializer
        method = handler_call_details.method

        def safe(data: bytes) -> Any:
            try:
                return deserialize(data)
            except Exception:
                return _UNDECODABLE

        async def refuse(context: grpc.aio.ServicerContext[Any, Any]) -> None:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the request is not a valid protobuf message for {method}",
            )

        if handler.unary_unary is not None:
            unary: Any = handler.unary_unary  # an async callable on aio servers

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                if request is _UNDECODABLE:
                    await refuse(context)
                return await unary(request, context)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary,
                request_deserializer=safe,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            stream: Any = handler.unary_stream
            if not inspect.isasyncgenfunction(stream):
                # A handler that streams with context.write() (grpc.health.v1 Watch) is a
                # coroutine, not an async iterator: wrap it as one.
                async def unary_stream_writer(
                    request: Any, context: grpc.aio.ServicerContext[Any, Any]
                ) -> None:
                    if request is _UNDECODABLE:
                        await refuse(context)
                    await stream(request, context)

                return grpc.unary_stream_rpc_method_handler(
                    unary_stream_writer,
                    request_deserializer=safe,
                    response_serializer=handler.response_serializer,
                )

            async def unary_stream(
                request: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                if request is _UNDECODABLE:
                    await refuse(context)
                async for response in stream(request, context):
                    yield response

            return grpc.unary_stream_rpc_method_handler(
                unary_stream,
                request_deserializer=safe,
                response_serializer=handler.response_serializer,
            )
        return handler


class InFlightCalls(grpc.aio.ServerInterceptor):
    """Counts the calls whose handler still runs. grpc's `stop` returns once it cancelled
    the calls left at the grace's end, not once their handlers unwound: the server's
    resources close only after `idle` (a handler may still use them while it unwinds)."""

    def __init__(self) -> None:
        self._running = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def idle(self, timeout_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()

    @contextlib.contextmanager
    def _call(self) -> Iterator[None]:
        self._running += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        kinds = (
            (handler.unary_unary, grpc.unary_unary_rpc_method_handler),
            (handler.unary_stream, grpc.unary_stream_rpc_method_handler),
            (handler.stream_unary, grpc.stream_unary_rpc_method_handler),
            (handler.stream_stream, grpc.stream_stream_rpc_method_handler),
        )
        behavior, make = next((k for k in kinds if k[0] is not None), (None, None))
        if behavior is None or make is None:
            return handler
        wrapped: Any
        if inspect.isasyncgenfunction(behavior):
            stream: Any = behavior

            async def wrapped(request: Any, context: Any) -> AsyncIterator[Any]:
                with self._call():
                    async for response in stream(request, context):
                        yield response

        elif inspect.iscoroutinefunction(behavior):
            call: Any = behavior

            async def wrapped(request: Any, context: Any) -> Any:
                with self._call():
                    return await call(request, context)

        else:  # a synchronous handler: none of ours
            return handler
        return make(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


Drain = Callable[[float], Awaitable[object]]
# What the server's calls get after a drain that took the whole grace.
STREAM_FLUSH_S = 1.0


@dataclass
class RunningServer:
    """A started server and what it owns; `stop` is the one way down."""

    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    service_names: Sequence[str]
    # Closed once, in reverse order of opening, after the server has stopped.
    resources: AsyncExitStack = field(default_factory=AsyncExitStack)
    # In-flight work that is not an RPC (a generation nobody watches): run out first,
    # within the grace, while the server still takes calls; then the server stops.
    drain: Drain | None = None
    in_flight: InFlightCalls = field(default_factory=InFlightCalls)
    _stopping: asyncio.Task[None] | None = None

    async def stop(self, grace_s: float) -> None:
        """Health NOT_SERVING (balancers stop sending work); the drain, then the running
        calls, finish within `grace_s` (then are cancelled), then the resources close. A
        second call waits for the first instead of closing anything again."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop(grace_s))
        # Shielded: a caller cancelled mid-shutdown must not leave resources half closed.
        await asyncio.shield(self._stopping)

    async def _stop(self, grace_s: float) -> None:
        try:
            await self.health.enter_graceful_shutdown()
            if self.drain is not None:
                # The drain first, with the server still taking calls: the work refuses
                # new tasks itself (the agent: new generations UNAVAILABLE), while a
                # client re-attaching to running work (a resume) is still served.
                loop = asyncio.get_running_loop()
                deadline = loop.time() + grace_s
                await self.drain(grace_s)
                # Streams of work that just ended still send their last events: a grace
                # the drain used up must not cut them.
                grace_s = max(STREAM_FLUSH_S, deadline - loop.time())
            await self.server.stop(grace_s)
            await self.in_flight.idle(STREAM_FLUSH_S)
        finally:
            await self.resources.aclose()


async def start_server(
    address: str,
    register: Callable[[grpc.aio.Server], Sequence[str]],
    security: GrpcSecurity | None = None,
    *,
    resources: AsyncExitStack | None = None,
    drain: Drain | None = None,
    options: Sequence[tuple[str, int]] = (),
) -> RunningServer:
    """Starts an aio server on `address` (port 0 picks a free one), every service SERVING.

    `register` adds the servicers and returns their full service names, which health and
    reflection then announce. The server owns `resources` from here on: `stop` closes
    them, and so does a failed start. `options` are added to SERVER_OPTIONS.
    """
    resources = resources or AsyncExitStack()
    try:
        security = security or GrpcSecurity()
        in_flight = InFlightCalls()
        server = grpc.aio.server(
            options=[*SERVER_OPTIONS, *options],
            interceptors=[*server_interceptors(security), DecodeErrorInterceptor(), in_flight],
        )
        names = list(register(server))
        health_servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        health_name = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
        reflection.enable_server_reflection([*names, health_name, reflection.SERVICE_NAME], server)
        try:
            port = add_port(server, address, security)
        except RuntimeError:
            raise ListenError(
                f"cannot listen on {address}: the port is taken (another server is serving "
                "it) or the address cannot be bound"
            ) from None
        await server.start()
    except BaseException:
        await resources.aclose()
        raise
    for name in ["", *names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningServer(server, port, health_servicer, names, resources, drain, in_flight)


async def serve_until_signalled(
    running: RunningServer, grace_s: float, startup_modules: Sequence[str] = ()
) -> None:
    """Serves until SIGTERM or SIGINT (or the server ends), then `running.stop(grace_s)`.
    `startup_modules` are imported before the startup heap is frozen."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    freeze_startup_heap(startup_modules)
    server_done = asyncio.ensure_future(running.server.wait_for_termination())
    stop_wait = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({server_done, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        log.info("shutting down", extra={"grace_s": grace_s})
        await running.stop(grace_s)
    finally:
        stop_wait.cancel()
        server_done.cancel()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


class GrpcService(ABC):
    """One service process: `start` (each service's own) builds `running`; stopping and
    serving until a signal are the same for every service."""

    def __init__(self, shutdown_grace_s: float, *, stop_grace_s: float | None = None) -> None:
        """`shutdown_grace_s`: the grace after a signal. `stop_grace_s`: `stop()`'s
        default when called without one (None: the shutdown grace)."""
        self.running: RunningServer | None = None
        self._shutdown_grace_s = shutdown_grace_s
        self._stop_grace_s = shutdown_grace_s if stop_grace_s is None else stop_grace_s

    @property
    def port(self) -> int:
        assert self.running is not None
        return self.running.port

    @abstractmethod
    async def start(self) -> None: ...

    def startup_modules(self) -> Sequence[str]:
        """Modules the service will import while serving: imported before its startup heap
        is frozen (`freeze_startup_heap`), so they are frozen with it."""
        return ()

    async def stop(self, grace_s: float | None = None) -> None:
        if self.running is not None:
            await self.running.stop(self._stop_grace_s if grace_s is None else grace_s)

    async def serve(self) -> None:
        """Starts, then serves until a signal. A ListenError reaches the caller, which
        knows which flag and variable set the address (services/cli.py)."""
        await self.start()
        assert self.running is not None
        await serve_until_signalled(self.running, self._shutdown_grace_s, self.startup_modules())


def open_metrics_port(resources: AsyncExitStack, registry: CollectorRegistry, listen: str) -> None:
    """/metrics on `listen` (the gRPC services have no HTTP server; '' turns it off),
    closed with the other `resources`."""
    if not listen:
        return
    host, port = split_host_port(listen)
    try:
        server, _ = serve_metrics(registry, host, port)
    except OSError as exc:
        raise ListenError(
            f"cannot serve /metrics on {listen}: {exc.strerror}", metrics=True
        ) from None

    async def close() -> None:
        # shutdown() waits for the serving thread's next poll (up to 0.5 s): not on the loop.
        await asyncio.to_thread(server.shutdown)
        server.server_close()

    resources.push_async_callback(close)


# Young-generation collections: after this many net container allocations instead of
# CPython's 700. A loaded agent allocates per model delta (events, frames, protobuf
# messages), nearly all freed by reference counting at once, and at 700 it ran hundreds
# of collections a second over the same live set: ~6 % of its loop at 25 paced
# generations (py-spy). bench/README.md, "gc_pause.py": 0.78-0.92x the CPU per delta
# there, the same p99.
YOUNG_COLLECTION_THRESHOLD = 10_000


def freeze_startup_heap(modules: Sequence[str] = ()) -> None:
    """Imports `modules`, then moves what exists once a server is up — modules, SDK and
    protobuf classes, about 50 k objects — out of the cycle collector's view. They live as
    long as the process, and every full collection would otherwise walk them again,
    stalling the loop (tens of ms under load). Garbage among them is still freed by
    reference counting. A module imported later stays in view: whatever a service knows it
    will import (the agent: the SDKs it has keys for) is named here, so it cannot come
    after the freeze. Young collections then come less often (the threshold above)."""
    for module in modules:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])


def split_host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)
