"""`s2c generate`: one generation over gRPC from the shell, each variant's HTML written out.

    s2c generate screenshot.png --out site/
    s2c generate "a pricing page for a bakery" --stack bootstrap --variants 2
    s2c generate shot.png --json | jq -c 'select(.tool_start)'

The input is a screenshot when it names a png, jpeg, webp or gif file, a text prompt
otherwise. Progress is live on a terminal (one row per variant: model, state, the tool
running now, bytes of code so far) and a line per step otherwise, both on stderr; a
summary table follows on stdout; both show each variant's input, cached and output tokens
and its cost ("unpriced" for a model the agent has no price for). `--json` prints every
event as one JSON line on stdout (proto field names, default values included), then one
last line `{"summary": {...}}`: the outcome and, per variant, its state and a usage object
(`input_tokens`, `cached_tokens`, `cache_write_tokens`, `output_tokens`, `cost_usd` —
null when unpriced — and `priced`; the object is null when no model turn ended), and
nothing else there (see `services.cli_usage`; the display is `services.cli_view`).

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
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from rich.console import Console
from rich.markup import escape
from rich.text import Text
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.cli_view import (
    GenerationView,
    JsonLines,
    LiveProgress,
    Reporter,
    StepLog,
    VariantView,
    summary_json,
    summary_table,
)
from services.common.errors import bad_request_violations
from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.proto_enums import enum_values
from services.common.security import GrpcSecurity, create_channel

# GenerationView moved to cli_view; other tools (s2c eval) still import it from here.
__all__ = ["GenerationView", "UsageError", "build_request", "generate", "sniff_image"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})
CANCEL_TIMEOUT_S = 5.0


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
    stacks = enum_values(pb.Stack)
    if args.stack not in stacks:
        raise UsageError(f"unknown stack {args.stack!r}; one of: {', '.join(stacks)}")
    if args.variants < 0:
        raise UsageError("--variants must be 0 (the agent chooses) or more")
    try:
        request = pb.GenerateCodeRequest(
            generation_id=uuid.uuid4().hex,
            generation_type=pb.GENERATION_TYPE_CREATE,
            stack=stacks[args.stack],
            variant_count=args.variants,
            models=args.model,
            # The summary table and the step log show the scores.
            score_fidelity=True,
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
                # A stream that ends only detaches (the agent keeps the generation for a
                # re-attach during its resume grace): the cancel must be said.
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
    if args.json and view.variants and not outcome.broken_pipe:
        try:
            sys.stdout.write(json.dumps(summary_json(view), ensure_ascii=False) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            outcome.broken_pipe = True
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
