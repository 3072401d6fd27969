"""`s2c generate`: one generation over gRPC from the shell, each variant's HTML written out.

    s2c generate screenshot.png --out site/
    s2c generate "a pricing page for a bakery" --stack bootstrap --variants 2
    s2c generate shot.png --json | jq -c 'select(.tool_start)'

The input is a screenshot when it names a png, jpeg, webp or gif file, a text prompt
otherwise. Progress is live on a terminal (one row per variant: model, state, the tool
running now, bytes of code so far) and a line per step otherwise, both on stderr; a
summary table follows on stdout. `--json` prints every event as one JSON line on stdout
(proto field names, default values included) and nothing else there.

The agent is dialled as the other services dial it: `--agent` (default `S2C_AGENT_ADDR`),
with TLS and the bearer token from `S2C_GRPC_TLS_CA`, `S2C_GRPC_TOKEN`, … when they are set
(see `services.common.security`); plaintext otherwise.

Each variant that completes is written to `OUT/variant-N.html` (N counts from 1) as soon
as it completes; a variant that fails writes nothing.

Exit codes:
  0    the generation completed and every variant produced code
  1    the generation failed, or some variant failed (the others are still written)
  2    bad usage (unknown stack, missing image…), or the RPC failed: agent unreachable,
       request rejected, stream broken
  130  interrupted by Ctrl+C (143: SIGTERM; 141: stdout closed): the generation is cancelled
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import grpc
from google.protobuf import json_format
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2

from services.common.errors import bad_request_violations
from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.security import GrpcSecurity, create_channel
from services.gateway.params import STACKS

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})
CANCEL_TIMEOUT_S = 5.0
REFRESH_S = 0.125


class UsageError(Exception):
    """The command line asks for something that cannot be sent."""


def sniff_image(data: bytes) -> str | None:
    """The MIME type of a png, jpeg, webp or gif image, judged by its content."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def build_request(args: argparse.Namespace) -> pb.GenerateCodeRequest:
    """The request the command line asks for; raises UsageError when it cannot be sent."""
    if args.stack not in STACKS:
        raise UsageError(f"unknown stack {args.stack!r}; one of: {', '.join(STACKS)}")
    if args.variants < 0:
        raise UsageError("--variants must be 0 (the agent chooses) or more")
    try:
        request = pb.GenerateCodeRequest(
            generation_id=uuid.uuid4().hex,
            generation_type=pb.GENERATION_TYPE_CREATE,
            stack=STACKS[args.stack],
            variant_count=args.variants,
            models=args.model,
        )
    except ValueError as exc:
        raise UsageError(f"invalid option: {exc}") from None
    text: str = args.input
    path = Path(text)
    if path.is_file():
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from None
        mime = sniff_image(data)
        if mime is None:
            raise UsageError(f"{path} is not a png, jpeg, webp or gif image")
        request.input_mode = pb.INPUT_MODE_IMAGE
        encoded = base64.b64encode(data).decode("ascii")
        request.prompt.images.append(f"data:{mime};base64,{encoded}")
    elif path.suffix.lower() in IMAGE_SUFFIXES and "\n" not in text:
        raise UsageError(f"no such image file: {path}")
    elif path.is_dir():
        raise UsageError(f"{path} is a directory, not an image")
    elif not text.strip():
        raise UsageError("the prompt is empty")
    else:
        request.input_mode = pb.INPUT_MODE_TEXT
        request.prompt.text = text
    return request


# ---------------------------------------------------------------------------- state


@dataclass
class VariantView:
    """What the stream has said about one variant so far."""

    index: int
    model: str = "?"
    state: str = "running"  # running | completed | failed | cancelled | interrupted
    tool: str = ""  # the tool running now
    tool_calls: int = 0
    note: str = ""  # the latest status line or assistant message, or the error
    note_id: str = ""  # the event_id of the message in `note`
    code: str = ""
    usage: common_pb2.Usage = field(default_factory=common_pb2.Usage)

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def code_bytes(self) -> int:
        return len(self.code.encode())


@dataclass
class GenerationView:
    """Applies the events of one generation, in order, to a per-variant picture."""

    generation_id: str = ""
    variants: list[VariantView] = field(default_factory=list)
    error: str = ""
    status: int | None = None  # RunStatus, once generation_complete arrived
    stopped: str = ""  # how the stream ended early, when it did
    started: float = field(default_factory=time.monotonic)

    def variant(self, index: int) -> VariantView:
        while len(self.variants) <= index:
            self.variants.append(VariantView(len(self.variants)))
        return self.variants[index]

    def apply(self, event: pb.GenerationEvent) -> None:
        self.generation_id = event.generation_id or self.generation_id
        kind = event.WhichOneof("payload")
        if kind == "variant_count":
            for i, model in enumerate(event.variant_count.models):
                self.variant(i).model = model
            if event.variant_count.count:
                self.variant(event.variant_count.count - 1)
            return
        if kind == "generation_error":
            self.error = event.generation_error.message
            return
        if kind == "generation_complete":
            self.status = event.generation_complete.status
            return
        if not event.HasField("variant_index"):
            return  # a generation-wide event of a newer agent
        variant = self.variant(event.variant_index)
        if kind == "status":
            variant.note, variant.note_id = event.status.text, ""
        elif kind == "thinking_delta":
            variant.note, variant.note_id = "thinking…", event.event_id
        elif kind == "assistant_delta":
            if variant.note_id != event.event_id:
                variant.note, variant.note_id = "", event.event_id
            variant.note += event.assistant_delta.text
        elif kind == "tool_start":
            variant.tool = event.tool_start.name
            variant.tool_calls += 1
        elif kind == "tool_result":
            variant.tool = ""
        elif kind == "code_delta":
            # Offsets count code points, as Python's str indexes do.
            delta = event.code_delta
            variant.code = variant.code[: delta.offset] + delta.text
        elif kind == "code_snapshot":
            variant.code = event.code_snapshot.content
        elif kind == "usage":
            _add_usage(variant.usage, event.usage)
        elif kind == "variant_complete":
            variant.state, variant.tool = "completed", ""
            if event.variant_complete.HasField("usage"):
                variant.usage.CopyFrom(event.variant_complete.usage)
        elif kind == "variant_error":
            variant.state, variant.tool = "failed", ""
            variant.note = event.variant_error.message

    def stop_running(self, state: str) -> None:
        """The stream is over early: whatever still ran ends as `state`."""
        if self.status is None:
            self.stopped = self.stopped or state
        for variant in self.variants:
            if variant.state == "running":
                variant.state, variant.tool = state, ""

    @property
    def outcome(self) -> str:
        if self.status is None:
            return self.stopped or "running"
        name = pb.RunStatus.Name(self.status)
        return name.removeprefix("RUN_STATUS_").lower()


def _add_usage(total: common_pb2.Usage, turn: common_pb2.Usage) -> None:
    # Every field of a `usage` event is that turn's alone, cost included.
    total.input_tokens += turn.input_tokens
    total.output_tokens += turn.output_tokens
    total.cache_read_tokens += turn.cache_read_tokens
    total.cache_write_tokens += turn.cache_write_tokens
    total.total_tokens += turn.total_tokens
    total.cost_usd += turn.cost_usd


# --------------------------------------------------------------------------- output

STATE_STYLES = {
    "running": "cyan",
    "completed": "green",
    "failed": "red",
    "cancelled": "yellow",
    "interrupted": "yellow",
}


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1024:,.1f} KiB"


def _tokens(usage: common_pb2.Usage) -> str:
    if not (usage.input_tokens or usage.output_tokens):
        return "–"
    return f"{usage.input_tokens:,} in / {usage.output_tokens:,} out"


def _cost(usage: common_pb2.Usage) -> str:
    return f"${usage.cost_usd:.4f}" if usage.cost_usd else "–"


def progress_table(view: GenerationView, spinners: dict[int, Spinner]) -> RenderableType:
    """The live picture: one row per variant (`spinners` keep their frames across redraws)."""
    elapsed = time.monotonic() - view.started
    header = Text(f"s2c generation {view.generation_id} · {elapsed:.0f}s", style="bold")
    table = Table()
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("model", no_wrap=True)
    table.add_column("state", no_wrap=True, min_width=11)
    table.add_column("tool", no_wrap=True, min_width=11)
    table.add_column("code", justify="right", no_wrap=True, min_width=9)
    # The only column that gives way on a narrow terminal; its text is cut to one line.
    table.add_column("status", max_width=72)
    for v in view.variants:
        state: RenderableType
        if v.state == "running":
            state = spinners.setdefault(v.index, Spinner("dots", Text("running", style="cyan")))
        else:
            state = Text(v.state, style=STATE_STYLES[v.state])
        table.add_row(
            str(v.number),
            escape(v.model),
            state,
            escape(v.tool) if v.tool else "",
            _size(v.code_bytes),
            Text(" ".join(v.note.split()), no_wrap=True, overflow="ellipsis"),
        )
    if not view.variants:
        return Group(header, spinners.setdefault(-1, Spinner("dots", "waiting for the agent…")))
    return Group(header, table)


def summary_table(view: GenerationView) -> RenderableType:
    """The final picture, printed once at the end."""
    elapsed = time.monotonic() - view.started
    style = "green" if view.outcome == "completed" else "red"
    header = Text.assemble(
        f"generation {view.generation_id}: ", (view.outcome, f"bold {style}"), f" in {elapsed:.1f}s"
    )
    table = Table()
    table.add_column("#", justify="right")
    table.add_column("model")
    table.add_column("result")
    table.add_column("tool calls", justify="right")
    table.add_column("code", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("cost", justify="right")
    for v in view.variants:
        result = Text(v.state, style=STATE_STYLES[v.state])
        if v.state == "failed" and v.note:
            result.append(f": {v.note}")
        table.add_row(
            str(v.number),
            escape(v.model),
            result,
            str(v.tool_calls),
            _size(v.code_bytes),
            _tokens(v.usage),
            _cost(v.usage),
        )
    return Group(header, table)


class Reporter(Protocol):
    """Shows the events as they arrive."""

    def event(self, event: pb.GenerationEvent) -> None: ...

    def running(self) -> contextlib.AbstractAsyncContextManager[None]: ...


class JsonLines:
    """`--json`: each event as one JSON line on stdout, nothing else there."""

    def event(self, event: pb.GenerationEvent) -> None:
        line = json_format.MessageToDict(
            event, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        yield


class LiveProgress:
    """A terminal: the per-variant table, redrawn in place on stderr."""

    def __init__(self, view: GenerationView, console: Console) -> None:
        spinners: dict[int, Spinner] = {}
        self._live = Live(
            get_renderable=lambda: progress_table(view, spinners),
            console=console,
            auto_refresh=False,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def event(self, event: pb.GenerationEvent) -> None:
        pass  # the ticker redraws at a steady rate, however fast the events come

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async def tick() -> None:
            while True:
                self._live.refresh()
                await asyncio.sleep(REFRESH_S)

        with self._live:
            ticker = asyncio.create_task(tick())
            try:
                yield
            finally:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker


class StepLog:
    """Not a terminal (CI logs, pipes): one line per step on stderr."""

    def __init__(self, view: GenerationView, console: Console) -> None:
        self._view = view
        self._console = console

    def _say(self, line: str, style: str = "") -> None:
        self._console.print(Text(line, style=style), soft_wrap=True)

    def event(self, event: pb.GenerationEvent) -> None:
        kind = event.WhichOneof("payload")
        v = self._view.variant(event.variant_index)
        prefix = f"[variant {v.number}]"
        if kind == "variant_count":
            models = ", ".join(event.variant_count.models)
            count = event.variant_count.count
            self._say(f"generation {event.generation_id}: {count} variant(s) on {models}")
        elif kind == "status":
            self._say(f"{prefix} {event.status.text}")
        elif kind == "tool_start":
            self._say(f"{prefix} {event.tool_start.name} …")
        elif kind == "tool_result":
            ok = event.tool_result.ok
            self._say(
                f"{prefix} {event.tool_result.name} {'ok' if ok else 'failed'}"
                f" ({_size(v.code_bytes)} of code)",
                "" if ok else "yellow",
            )
        elif kind == "variant_complete":
            self._say(f"{prefix} completed ({_size(v.code_bytes)})", "green")
        elif kind == "variant_error":
            self._say(f"{prefix} failed: {event.variant_error.message}", "red")
        elif kind == "generation_error":
            self._say(f"generation failed: {event.generation_error.message}", "red")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        yield


# ---------------------------------------------------------------------------- run


@dataclass
class Outcome:
    view: GenerationView
    rpc_error: grpc.aio.AioRpcError | None = None
    signal: int | None = None
    broken_pipe: bool = False
    setup_error: str = ""
    written: list[Path] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)


def generate(args: argparse.Namespace) -> int:
    """Runs the generation, writes `variant-N.html` into --out; the exit code is the outcome."""
    err = Console(stderr=True)
    try:
        request = build_request(args)
        try:
            security = GrpcSecurity.from_env()
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the output directory {out}: {exc.strerror}") from None
    except UsageError as exc:
        _error(err, str(exc))
        return EXIT_USAGE
    view = GenerationView(generation_id=request.generation_id)
    reporter: Reporter
    if args.json:
        reporter = JsonLines()
    elif err.is_interactive:
        reporter = LiveProgress(view, err)
    else:
        reporter = StepLog(view, err)
    try:
        outcome = asyncio.run(_run(request, args.agent, security, out, view, reporter))
    except KeyboardInterrupt:  # before the handler was in place, or a second Ctrl+C
        _error(err, "interrupted")
        return 128 + signal.SIGINT
    return _report(outcome, args, err)


async def _run(
    request: pb.GenerateCodeRequest,
    target: str,
    security: GrpcSecurity,
    out: Path,
    view: GenerationView,
    reporter: Reporter,
) -> Outcome:
    outcome = Outcome(view)
    loop = asyncio.get_running_loop()
    try:
        channel = create_channel(target, security, CHANNEL_OPTIONS)
    except OSError as exc:  # an unreadable certificate or CA file
        outcome.setup_error = f"cannot read {exc.filename}: {exc.strerror}"
        return outcome
    async with channel:
        stub = pb_grpc.AgentServiceStub(channel)
        call = stub.GenerateCode(request)

        def interrupt(signum: int) -> None:
            outcome.signal = outcome.signal or signum
            call.cancel()  # the agent cancels the generation when its caller goes away

        with _signals(loop, interrupt):
            async with reporter.running():
                try:
                    async for response in call:
                        for event in response.events:
                            view.apply(event)
                            if event.WhichOneof("payload") == "variant_complete":
                                _write(view.variant(event.variant_index), out, outcome)
                            reporter.event(event)
                except BrokenPipeError:
                    outcome.broken_pipe = True
                    call.cancel()
                except asyncio.CancelledError:
                    if outcome.signal is None:
                        raise
                except grpc.aio.AioRpcError as exc:
                    if outcome.signal is None or exc.code() != grpc.StatusCode.CANCELLED:
                        outcome.rpc_error = exc
            if outcome.signal is not None or outcome.broken_pipe:
                view.stop_running("cancelled")
                # Cancelling the stream already stops the generation; saying so explicitly
                # also covers other watchers keeping it alive.
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await stub.CancelGeneration(
                        pb.CancelGenerationRequest(generation_id=request.generation_id),
                        timeout=CANCEL_TIMEOUT_S,
                    )
    view.stop_running("interrupted")
    return outcome


@contextlib.contextmanager
def _signals(loop: asyncio.AbstractEventLoop, handler: Callable[[int], None]) -> Iterator[None]:
    """Routes SIGINT/SIGTERM to `handler(signum)` while the generation runs."""
    installed: list[int] = []
    for signum in (int(signal.SIGINT), int(signal.SIGTERM)):
        try:
            loop.add_signal_handler(signum, handler, signum)
        except (NotImplementedError, RuntimeError):  # not on this platform / thread
            continue
        installed.append(signum)
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def _write(variant: VariantView, out: Path, outcome: Outcome) -> None:
    target = out / f"variant-{variant.number}.html"
    try:
        target.write_text(variant.code, encoding="utf-8")
    except OSError as exc:
        outcome.write_errors.append(f"cannot write {target}: {exc.strerror}")
        return
    outcome.written.append(target)


def _report(outcome: Outcome, args: argparse.Namespace, err: Console) -> int:
    """Prints the summary (unless --json) and the reason for a non-zero exit code."""
    view = outcome.view
    if not (args.json or outcome.broken_pipe):
        out = Console()
        try:
            if view.variants:
                out.print(summary_table(view))
            for path in outcome.written:
                out.print(f"wrote {escape(str(path))}", soft_wrap=True, highlight=False)
        except BrokenPipeError:
            outcome.broken_pipe = True
    if outcome.broken_pipe:
        # Nobody reads stdout any more; keep the interpreter from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    for message in outcome.write_errors:
        _error(err, message)
    if outcome.setup_error:
        _error(err, outcome.setup_error)
        return EXIT_USAGE
    if outcome.signal is not None:
        _error(err, f"cancelled generation {view.generation_id}")
        return 128 + outcome.signal
    if outcome.rpc_error is not None:
        _error(err, _describe_rpc_error(outcome.rpc_error, args.agent, bool(view.variants)))
        return EXIT_USAGE
    if view.status is None:
        _error(err, "the agent ended the stream before the generation completed")
        return EXIT_USAGE
    failed = [v for v in view.variants if v.state != "completed"]
    if view.status != pb.RUN_STATUS_COMPLETED:
        _error(err, f"generation {view.outcome}: {view.error or 'no variant produced code'}")
        return EXIT_FAILED
    if failed:
        numbers = ", ".join(str(v.number) for v in failed)
        _error(err, f"{len(failed)} of {len(view.variants)} variant(s) failed: {numbers}")
        return EXIT_FAILED
    if outcome.write_errors:
        return EXIT_FAILED
    return EXIT_OK


def _describe_rpc_error(exc: grpc.aio.AioRpcError, target: str, streaming: bool) -> str:
    code = exc.code()
    if code == grpc.StatusCode.UNAVAILABLE and streaming:
        return f"lost the connection to the agent at {target} mid-generation ({exc.details()})"
    if code == grpc.StatusCode.UNAVAILABLE:
        return (
            f"cannot reach the agent at {target} ({exc.details()}). Is it running? Start the "
            "suite with `s2c up`, or point --agent / S2C_AGENT_ADDR at it (and if it serves "
            "TLS, set S2C_GRPC_TLS_CA)."
        )
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return (
            f"the agent at {target} refused the call ({exc.details()}): set S2C_GRPC_TOKEN to "
            "the suite's gRPC token"
        )
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        violations = bad_request_violations(exc)
        detail = "; ".join(f"{v.field}: {v.description}" for v in violations)
        return f"the agent rejected the request: {detail or exc.details()}"
    return f"the call to the agent at {target} failed: {code.name}: {exc.details()}"


def _error(console: Console, message: str) -> None:
    console.print(Text(f"s2c: {message}", style="red"), soft_wrap=True, highlight=False)
