"""One browser WebSocket ⇄ one GenerateCode (or WatchGeneration) stream."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any

import grpc
from aiohttp import WSMsgType, web
from prometheus_client import Counter
from s2c.agent.v1 import agent_service_pb2 as pb

from services.common.errors import bad_request_violations
from services.gateway.frames import Frame, FrameBuilder, encode, frame
from services.gateway.metrics import GatewayMetrics

log = logging.getLogger(__name__)

APP_ERROR = 4332  # upstream: an `error` frame precedes it
USER_CANCEL = 4333  # sent by the upstream UI to cancel
SLOW_CLIENT = 1008  # policy violation: the browser did not read its frames in time
# RFC 6455's "try again later": the agent that holds a resumable socket's generation is
# restarting or out of reach; the client re-attaches with backoff (the built-in UI does).
TRY_AGAIN_LATER = 1013
AGENT_RESTARTING = "The agent holding this generation is unavailable: re-attach shortly."

_END = object()  # the agent's stream ended
_WAKE = object()  # the browser went away
_TIMED_OUT = object()  # nothing came before the deadline

# How a stream of a generation that did not complete ends (a resumed one included): a
# cancelled one like a cancel in the upstream UI — each unfinished variant gets a
# variantError, then close 4333, which both UIs show as "cancelled"; one cut short by an
# agent restart with an `error` frame and 4332, like any failure.
CANCELLED = "The generation was cancelled."
INTERRUPTED = "The generation was interrupted: the agent stopped before it finished."


def rpc_error_text(exc: grpc.aio.AioRpcError, agent_addr: str) -> str:
    code = exc.code()
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        violations = bad_request_violations(exc)
        if violations:
            return "Invalid request: " + "; ".join(
                f"{v.field}: {v.description}" for v in violations
            )
        return f"Invalid request: {exc.details()}"
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"The agent service at {agent_addr} is unavailable. Is it running?"
    if code == grpc.StatusCode.NOT_FOUND:
        return f"Not found: {exc.details()}"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "The generation took too long and was stopped."
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return f"The agent is busy ({exc.details()}). Please retry in a moment."
    if code == grpc.StatusCode.CANCELLED:
        return "The agent stopped the generation before it finished. Please retry."
    if code in _UNEXPLAINED:
        # Their details are an exception's text (gRPC's for a handler that raised).
        return f"An unexpected error occurred in the agent ({code.name}); its log has the cause."
    return f"An unexpected error occurred: {code.name}: {exc.details()}"


_UNEXPLAINED = (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL)


class _Mailbox:
    """The bounded FIFO from the stream's reader to the pump (one producer, one consumer,
    plus the client watcher's wake-up), with a deadline on `get`.

    It replaces an asyncio.Queue read under asyncio.timeout_at: per agent message those
    asked for the running loop several times (on Python 3.11 each a getpid system call),
    made a Timeout and a future and rescheduled a timer, about a sixth of the gateway's
    loop under load (cProfile at N=40). Here the loop is looked up once and a wait is one
    future and, with a deadline, one timer.
    """

    def __init__(self, maxsize: int) -> None:
        self._items: deque[object] = deque()
        self._maxsize = maxsize
        self._loop: asyncio.AbstractEventLoop | None = None
        self._getter: asyncio.Future[bool] | None = None
        self._putter: asyncio.Future[None] | None = None

    def full(self) -> bool:
        return len(self._items) >= self._maxsize

    def put_nowait(self, item: object) -> None:
        self._items.append(item)
        getter = self._getter
        if getter is not None and not getter.done():
            getter.set_result(True)

    async def put(self, item: object) -> None:
        # One waiting producer: a second would take the first's wake-up and leave it
        # asleep with room in the mailbox.
        if self._putter is not None:
            raise RuntimeError("the mailbox has one producer: put while another put waits")
        while self.full():
            self._putter = self._running_loop().create_future()
            try:
                await self._putter
            finally:
                self._putter = None
        self.put_nowait(item)

    async def get(self, deadline: float | None = None) -> object:
        """The next item, or `_TIMED_OUT` once the loop's clock passed `deadline`."""
        # One consumer: a second would take the first's wake-up (and its item).
        if self._getter is not None:
            raise RuntimeError("the mailbox has one consumer: get while another get waits")
        while not self._items:
            loop = self._running_loop()
            waiter: asyncio.Future[bool] = loop.create_future()
            self._getter = waiter
            timer = None if deadline is None else loop.call_at(deadline, _expire, waiter)
            try:
                await waiter
            finally:
                self._getter = None
                if timer is not None:
                    timer.cancel()
            if not waiter.result() and not self._items:
                return _TIMED_OUT
        item = self._items.popleft()
        putter = self._putter
        if putter is not None and not putter.done():
            putter.set_result(None)
        return item

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


# Both streams carry `repeated GenerationEvent events` per message, so one reader serves.
EventStream = (
    grpc.aio.UnaryStreamCall[Any, pb.GenerateCodeResponse]
    | grpc.aio.UnaryStreamCall[Any, pb.WatchGenerationResponse]
)


class Relay:
    def __init__(
        self,
        ws: web.WebSocketResponse,
        events: EventStream,
        builder: FrameBuilder,
        agent_addr: str,
        metrics: GatewayMetrics,
        *,
        skip_until: int = 0,
        send_timeout_s: float = 30.0,
        wait_for_scores: bool = True,
        resumable: bool = False,
    ) -> None:
        self._send_timeout_s = send_timeout_s
        self._resumable = resumable
        # False: the client shows no scores, so its socket closes once every variant ended
        # with one completed (`closed_early`), never waiting for the scores.
        self._wait_for_scores = wait_for_scores
        self.closed_early = False
        self._ws = ws
        self._events = events
        self._builder = builder
        self._agent_addr = agent_addr
        # Batches come about one per agent tick (20 ms) per generation: 32 is over half a
        # second of events, and bounds what a stalled browser makes us hold.
        self._queue = _Mailbox(maxsize=32)
        self._metrics = metrics
        self._frame_counters: dict[str, tuple[Counter, Counter]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.client_gone = asyncio.Event()
        self.outcome = "completed"  # completed | failed | cancelled | client_closed
        self.client_close_code: int | None = None
        self._frames_sent = 0
        # A resume replays the log from the start to rebuild each variant's code,
        # sending nothing the client already has (events up to `skip_until`).
        self._skip_until = skip_until
        self._catching_up = skip_until > 0
        # What the log says about its end: the variants, those that ended, the status.
        self._variants = 0
        self._ended: set[int] = set()
        self._completed = 0
        self._final: int = pb.RUN_STATUS_UNSPECIFIED
        self._last_sequence = 0
        # Set by `interrupt`: the close code, its message, and whether that is an error.
        self._interrupted: tuple[int, str, bool] | None = None

    async def run(self) -> None:
        self._reader = asyncio.create_task(self._read())
        watcher = asyncio.create_task(self._watch_client())
        try:
            await self._pump()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            # Ending the stream detaches from the generation; only a cancel stops it.
            await self.stop()

    async def stop(self) -> None:
        """Stops reading the agent's stream (which ends the call)."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    def interrupt(self, code: int, message: str, *, error: bool) -> None:
        """Ends the socket from outside (the gateway's drain, drain.py): with an `error`
        frame saying `message` when `error`, else `message` as the close reason; then close
        `code`. Outcome "drained"; what becomes of the generation is the caller's."""
        if self._interrupted is not None or self.client_gone.is_set():
            return
        self._interrupted = (code, message, error)
        self.client_gone.set()
        if not self._queue.full():  # wake the pump if it is waiting for events
            self._queue.put_nowait(_WAKE)

    async def _read(self) -> None:
        try:
            async for batch in self._events:
                await self._queue.put(batch)
        except grpc.aio.AioRpcError as exc:
            # Even CANCELLED: the gateway cancels the call only after the relay ended, so
            # during it a cancel came from the agent, and the browser must be told.
            await self._queue.put(exc)
        await self._queue.put(_END)

    async def _watch_client(self) -> None:
        # The upstream UI sends nothing after the params: any message is ignored,
        # and a close (4333 = cancel, or a dropped connection) ends the generation.
        async for message in self._ws:
            if message.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
                break
        self.client_close_code = self._ws.close_code
        self.client_gone.set()
        if not self._queue.full():  # wake the pump if it is waiting for events
            self._queue.put_nowait(_WAKE)

    async def _pump(self) -> None:
        builder = self._builder
        while not self.client_gone.is_set():
            # The loop's clock is time.monotonic(), the builder's clock.
            item = await self._queue.get(builder.next_due())
            if item is _TIMED_OUT:
                await self._send(builder.on_timer())
                continue
            if item is _END or item is _WAKE:
                break
            if isinstance(item, grpc.aio.AioRpcError):
                log.warning(
                    "agent stream failed",
                    extra={"code": item.code().name, "details": (item.details() or "")[:300]},
                )
                await self._send(builder.flush_all())
                if self._resumable and item.code() == grpc.StatusCode.UNAVAILABLE:
                    # Its agent stopped or restarts: a re-attach finds the generation (or
                    # its record) again, so this is no final answer.
                    await self.retry_later()
                else:
                    await self.fail(rpc_error_text(item, self._agent_addr))
                return
            assert isinstance(item, pb.GenerateCodeResponse | pb.WatchGenerationResponse)
            frames: list[Frame] = []
            for event in item.events:
                self._see(event)
                if self._catching_up:
                    if event.sequence <= self._skip_until:
                        builder.on_event(event)
                        continue
                    self._catching_up = False
                    frames += builder.resync()
                frames += builder.on_event(event)
            if not self._catching_up:
                frames += builder.on_timer()  # whatever fell due, text included
            await self._send(frames)
            if not self._wait_for_scores and self._variants_done():
                # Everything this client shows has come: it never waits for the scores.
                self.closed_early = True
                break
        if self._interrupted is not None:
            await self._end_interrupted(*self._interrupted)
            return
        if self.client_gone.is_set():
            self.outcome = "client_closed"
            return
        await self._send(builder.resync() if self._catching_up else builder.flush_all())
        if builder.error is not None:
            await self.fail(builder.error)
        elif self._final == pb.RUN_STATUS_CANCELLED:
            await self._cancelled()
        elif self._final == pb.RUN_STATUS_INTERRUPTED:
            await self.fail(INTERRUPTED)
        elif self._frames_sent == 0:
            # A stream that ended cleanly without one event: never a bare 1000.
            log.warning("agent stream ended without any event")
            await self.fail("The agent ended the generation without a result. Please retry.")
        else:
            await self._ws.close(code=1000)

    def _variants_done(self) -> bool:
        """Every variant ended and one completed: the generation completes (only what
        comes after a variant's end, its scores, is left)."""
        return self._completed > 0 and len(self._ended) >= self._variants

    def _see(self, event: pb.GenerationEvent) -> None:
        kind = event.WhichOneof("payload")
        self._last_sequence = event.sequence
        if kind == "variant_complete" and event.variant_index not in self._ended:
            self._completed += 1
        if kind in ("variant_complete", "variant_error"):
            self._ended.add(event.variant_index)
        elif kind == "variant_count":
            self._variants = event.variant_count.count
        elif kind == "generation_complete":
            self._final = event.generation_complete.status

    async def _end_interrupted(self, code: int, message: str, error: bool) -> None:
        self.outcome = "drained"
        if error:
            await self._send([frame("error", None, value=message)])
        if not self._ws.closed:
            await self._ws.close(code=code, message=b"" if error else message.encode())

    async def _cancelled(self) -> None:
        frames: list[Frame] = []
        for index in range(self._variants):
            if index not in self._ended:
                event = pb.GenerationEvent(
                    sequence=self._last_sequence,
                    variant_index=index,
                    variant_error=pb.VariantError(message=CANCELLED),
                )
                frames += self._builder.on_event(event)
        await self._send(frames)
        self.outcome = "cancelled"
        if not self._ws.closed:
            await self._ws.close(code=USER_CANCEL, message=CANCELLED.encode())

    async def _send(self, frames: list[Frame]) -> None:
        if not frames:
            return
        try:
            # A browser that cannot keep up is let go instead of buffering without end.
            async with asyncio.timeout(self._send_timeout_s):
                for out in frames:
                    if self._ws.closed:
                        return
                    data = encode(out)
                    await self._ws.send_frame(data, WSMsgType.TEXT)
                    self._frames_sent += 1
                    count, size = self._counters(str(out["type"]))
                    count.inc()
                    size.inc(len(data))
        except TimeoutError:
            log.warning("browser too slow; disconnecting")
            self.client_gone.set()
            await self._ws.close(code=SLOW_CLIENT, message=b"Client too slow to keep up")
        except (ConnectionResetError, RuntimeError):
            self.client_gone.set()

    def _counters(self, kind: str) -> tuple[Counter, Counter]:
        counters = self._frame_counters.get(kind)
        if counters is None:
            counters = (
                self._metrics.frames.labels(kind),
                self._metrics.frame_bytes.labels(kind),
            )
            self._frame_counters[kind] = counters
        return counters

    async def retry_later(self) -> None:
        self.outcome = "retry_later"
        if not self._ws.closed:
            await self._ws.close(code=TRY_AGAIN_LATER, message=AGENT_RESTARTING.encode())

    async def fail(self, message: str) -> None:
        self.outcome = "failed"
        await self._send([frame("error", None, value=message)])
        if not self._ws.closed:
            await self._ws.close(code=APP_ERROR)
