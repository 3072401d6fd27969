"""What `s2c generate` shows: the per-variant picture of a generation, and its reporters.

`GenerationView` applies the events in order; the reporters draw it live on a terminal
(`LiveProgress`), as one line per step (`StepLog`) or as JSON lines (`JsonLines`); the
summary table and the `--json` summary line are drawn from it once the stream ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from google.protobuf import json_format
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.cli_usage import add_turn, cost_text, tokens_text, usage_json
from services.common.accessibility_view import accessibility_json, accessibility_text

REFRESH_S = 0.125

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
    reported: bool = False  # whether any usage came: before that, zeros mean nothing
    # The latest score per input image (`fidelity` events), by image index.
    fidelity: dict[int, common_pb2.Fidelity] = field(default_factory=dict)
    # The accessibility checks (`accessibility` events), by page and width.
    accessibility: dict[tuple[str, int], common_pb2.Accessibility] = field(default_factory=dict)
    # Every scored version of the page while it was refined (`refine_round` events).
    rounds: list[pb.RefineRound] = field(default_factory=list)

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def spent(self) -> common_pb2.Usage | None:
        """The usage so far; None until a model turn ended."""
        return self.usage if self.reported else None

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
            add_turn(variant.usage, event.usage)
            variant.reported = True
        elif kind == "variant_complete":
            variant.state, variant.tool = "completed", ""
            if event.variant_complete.HasField("usage"):
                # The agent's own totals: the same sum, and right even if a turn was missed.
                variant.usage.CopyFrom(event.variant_complete.usage)
                variant.reported = True
        elif kind == "variant_error":
            variant.state, variant.tool = "failed", ""
            variant.note = event.variant_error.message
        elif kind == "fidelity":
            variant.fidelity[event.fidelity.image_index] = event.fidelity
        elif kind == "accessibility":
            check = event.accessibility
            variant.accessibility[(check.path, check.viewport_width)] = check
        elif kind == "refine_round":
            variant.rounds.append(event.refine_round)

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


def summary_json(view: GenerationView) -> dict[str, Any]:
    """`--json`'s last line: the outcome and what each variant cost."""
    return {
        "summary": {
            "generation_id": view.generation_id,
            "status": view.outcome,
            "variants": [
                {
                    "variant_index": v.index,
                    "model": v.model,
                    "state": v.state,
                    "code_bytes": v.code_bytes,
                    "usage": usage_json(v.spent),
                    "fidelity": [fidelity_json(f) for _, f in sorted(v.fidelity.items())],
                    "accessibility": [
                        accessibility_json(a) for _, a in sorted(v.accessibility.items())
                    ],
                    "refine_rounds": [
                        {
                            "round": r.round,
                            "score": r.score if r.HasField("score") else None,
                            "rolled_back": r.rolled_back,
                        }
                        for r in v.rounds
                    ],
                }
                for v in view.variants
            ],
        }
    }


FIDELITY_METRICS = ("block_match", "text", "position", "color", "visual")


def fidelity_json(fidelity: common_pb2.Fidelity) -> dict[str, Any]:
    """A score in `--json`'s summary: null for a metric not computed."""
    data: dict[str, Any] = {
        "image_index": fidelity.image_index,
        "viewport_width": fidelity.viewport_width,
    }
    for name in FIDELITY_METRICS:
        data[name] = getattr(fidelity, name) if fidelity.HasField(name) else None
    data["unavailable_reason"] = fidelity.unavailable_reason
    return data


def rounds_text(rounds: list[pb.RefineRound]) -> str:
    """Each scored version, in order: `0.67 → 0.82 → 0.60 (rolled back)`."""
    shown = [
        (f"{r.score:.2f}" if r.HasField("score") else "not scored")
        + (" (rolled back)" if r.rolled_back else "")
        for r in rounds
    ]
    return " → ".join(shown)


def fidelity_text(fidelity: common_pb2.Fidelity) -> str:
    """`image 1: 0.91/0.95/0.98/0.93/0.71`, or why it was not scored."""
    head = f"image {fidelity.image_index + 1}"
    if fidelity.unavailable_reason:
        return f"{head}: not scored ({fidelity.unavailable_reason})"
    values = (
        f"{getattr(fidelity, n):.2f}" if fidelity.HasField(n) else "–" for n in FIDELITY_METRICS
    )
    return f"{head}: " + "/".join(values)


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
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
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
            tokens_text(v.spent),
            cost_text(v.spent),
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
    scored = any(v.fidelity for v in view.variants)
    if scored:
        table.add_column("fidelity (block/text/pos/color/visual)", justify="right")
    checked = any(v.accessibility for v in view.variants)
    if checked:
        table.add_column("accessibility", justify="right")
    refined = any(v.rounds for v in view.variants)
    if refined:
        table.add_column("refinement", justify="right")
    for v in view.variants:
        result = Text(v.state, style=STATE_STYLES[v.state])
        if v.state == "failed" and v.note:
            result.append(f": {v.note}")
        cells: list[RenderableType] = [
            str(v.number),
            escape(v.model),
            result,
            str(v.tool_calls),
            _size(v.code_bytes),
            tokens_text(v.spent),
            cost_text(v.spent),
        ]
        if scored:
            cells.append("\n".join(fidelity_text(f) for _, f in sorted(v.fidelity.items())))
        if checked:
            checks = sorted(v.accessibility.items())
            cells.append("\n".join(accessibility_text(a) for _, a in checks))
        if refined:
            cells.append(rounds_text(v.rounds))
        table.add_row(*cells)
    return Group(header, table)


class Reporter(Protocol):
    """Shows the events as they arrive."""

    def event(self, event: pb.GenerationEvent) -> None: ...

    def running(self) -> contextlib.AbstractAsyncContextManager[None]: ...


class JsonLines:
    """`--json`: each event as one JSON line on stdout, nothing else there. Every line names
    its generation and, for tool calls, the call: a `code_delta`'s, which the agent leaves
    empty as the stream implies them (agent_service.proto), are filled in."""

    def __init__(self) -> None:
        self._generation_id = ""
        self._calls: dict[int, str] = {}  # variant -> its latest tool_start's event_id

    def event(self, event: pb.GenerationEvent) -> None:
        line = json_format.MessageToDict(
            event, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        if event.HasField("code_delta"):
            line["generation_id"] = event.generation_id or self._generation_id
            line["event_id"] = event.event_id or self._calls.get(event.variant_index, "")
        else:
            self._generation_id = event.generation_id or self._generation_id
            if event.HasField("tool_start"):
                self._calls[event.variant_index] = event.event_id
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
            self._say(f"{prefix} completed ({_size(v.code_bytes)}){_spent(v)}", "green")
        elif kind == "variant_error":
            self._say(f"{prefix} failed: {event.variant_error.message}{_spent(v)}", "red")
        elif kind == "fidelity":
            self._say(f"{prefix} fidelity {fidelity_text(event.fidelity)}")
        elif kind == "accessibility":
            self._say(f"{prefix} accessibility {accessibility_text(event.accessibility)}")
        elif kind == "generation_error":
            self._say(f"generation failed: {event.generation_error.message}", "red")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        yield


def _spent(variant: VariantView) -> str:
    if variant.spent is None:
        return ""
    return f" · {tokens_text(variant.spent)} tokens · {cost_text(variant.spent)}"
