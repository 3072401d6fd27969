"""The agent loop of one variant: model turn → tool calls → next turn.

Transport-neutral: it reads a ProviderSession, calls a ToolExecutor and emits
domain events through a callback. Everything it emits for the live preview is
incremental: the streamed `create_file` content is decoded once, byte by byte,
and leaves as append-only `CodeDelta`s.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace

from services.agent import pricing
from services.agent.argscan import ArgumentScanner
from services.agent.budget import CostBudget as CostBudget  # re-exported: its old home
from services.agent.budget import EngineError as EngineError
from services.agent.domain import FileState, ToolCallRecord
from services.agent.events import (
    AssistantDelta,
    CodeDelta,
    CodeSnapshot,
    Payload,
    ThinkingDelta,
    ToolResult,
    ToolStart,
    Usage,
)
from services.agent.fence import FenceScanner, Piece
from services.agent.guard import ChangeGuard
from services.agent.live_build import LiveBuild
from services.agent.pages import entry_file, page_room
from services.agent.providers.base import (
    WHOLE_ARGUMENTS_CHARS,
    ExecutedTool,
    ProviderSession,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
)
from services.agent.providers.replay import replay_arguments
from services.agent.refine import Refiner
from services.agent.tooling import ToolContext, ToolExecutor
from services.common.html import extract_html_content
from services.common.project_limits import too_many_files, utf8_size
from services.common.project_paths import ProjectPaths
from services.common.text import clean_text
from services.common.tool_summaries import summarize_text, summarize_tool_input
from services.common.tracing import tracer

DEFAULT_PATH = "index.html"
COMPARE_TOOL = "compare_with_reference"
ACCESSIBILITY_TOOL = "check_accessibility"
# Turns in which a variant's model may ask for more calls than a turn may make: the
# calls past the bound are dropped (and the model told), and past this many such turns
# the variant stops: a model that floods after being told once will not stop on its own.
MAX_FLOODED_TURNS = 3

# (event_id, payload); the variant index is bound by whoever owns the callback.
Emit = Callable[[str, Payload], None]

# Upstream's replay step: at least this many characters (a fragment no longer than one
# step is streamed, not whole: the readers merge no further), at most this many steps.
_REPLAY_MIN_STEP = WHOLE_ARGUMENTS_CHARS
_REPLAY_MAX_STEPS = 18


@dataclass(frozen=True, slots=True)
class PreviewReplay:
    """How `create_file` content that arrives in one piece still makes a live preview.

    Gemini sends a call's arguments whole (so do Chat Completions servers that do not
    stream tool calls): forwarded as one delta, the preview would jump from nothing to
    the whole file. Upstream replays such content in steps before it runs the tool; so do
    we, with its step (at least 200 characters, at most 18 steps) and a pause between
    steps sized so that one call's replay pauses at most `total_s` in all. The gateway
    sends a setCode at most every 225 ms, so upstream's 10 ms pauses would reach the
    browser as one frame; pauses of `total_s / 18` (55 ms by default) give it one every
    few steps. A piece of at most one step (every streamed delta) is forwarded as is.
    """

    total_s: float = 0.0  # the most one call's replay may pause; 0: no replay
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @property
    def pause_s(self) -> float:
        return self.total_s / _REPLAY_MAX_STEPS

    def steps(self, text: str) -> list[str]:
        """`text` cut into the pieces a replay emits (one piece when there is no replay)."""
        if self.total_s <= 0 or len(text) <= _REPLAY_MIN_STEP:
            return [text]
        step = max(_REPLAY_MIN_STEP, math.ceil(len(text) / _REPLAY_MAX_STEPS))
        return [text[i : i + step] for i in range(0, len(text), step)]


@dataclass
class VariantEngine:
    index: int
    session: ProviderSession
    tools: ToolExecutor
    context: ToolContext
    emit: Emit
    budget: CostBudget
    file: FileState | None = None
    max_turns: int = 30
    max_tool_calls_per_turn: int = 16
    # The tools that render the page again (a score, an axe-core run), each capped per
    # variant: a model looping on them would spend the tool workers' browser.
    max_checks: Mapping[str, int] = field(
        default_factory=lambda: {COMPARE_TOOL: 3, ACCESSIBILITY_TOOL: 3}
    )
    checks: Counter[str] = field(default_factory=Counter)
    deadline: float = float("inf")  # time.monotonic(); tool calls get what is left
    preview_replay: PreviewReplay = field(default_factory=PreviewReplay)
    priced: bool = False  # said on every `usage` event, so a client can tell unpriced from $0
    usage: pricing.Usage = field(default_factory=pricing.Usage)
    tool_records: list[ToolCallRecord] = field(default_factory=list)
    # Whether a create_file's content went back to the model only as a placeholder.
    elided: bool = False
    # Text mode (docs/models.md): no tools; the page comes in the answer's fenced
    # block and previews as a create_file's content does.
    text_mode: bool = False
    # The project, by path, in the order its files were first written (an update's files
    # come first); `file` is the one the model last wrote, which a call without a path
    # works on.
    files: dict[str, FileState] = field(default_factory=dict)
    flooded_turns: int = 0  # turns that asked for more calls than max_tool_calls_per_turn
    live: LiveBuild | None = None  # a built project's previews while its files stream
    # Scores each page the model ends a turn with and asks for a better one (refine.py).
    refiner: Refiner | None = None
    # Checks an update's page for changes beyond the selected element (guard.py).
    guard: ChangeGuard | None = None

    def __post_init__(self) -> None:
        if self.file is not None and self.file.path not in self.files:
            self.files[self.file.path] = self.file

    def project(self) -> tuple[FileState, ...]:
        """Every file, the entry page (`dist/index.html`, `index.html`, else the first page)
        first."""
        entry = entry_file(list(self.files.values()))
        if entry is None:
            return ()
        return (entry, *(f for f in self.files.values() if f.path != entry.path))

    async def run(self) -> str:
        """Runs the loop to its end and returns the variant's final code."""
        try:
            for _ in range(self.max_turns):
                stream = _TurnStream(self)
                cost_before = self.session.total_cost_usd()
                turn = await self.session.stream_turn(stream.on_event)
                await stream.end()
                self.usage = self.usage + turn.usage
                # This turn's cost, like its tokens: a client sums turns to the variant's.
                turn_cost = self.session.total_cost_usd() - cost_before
                self.emit("", Usage(turn.usage, turn_cost, self.priced))
                if not turn.tool_calls:
                    code = self._finalize(turn.assistant_text, stream.page)
                    if code and self.guard is not None:
                        affordable = self.budget.affordable(self.session)
                        ask = await self.guard.review(self.project(), affordable)
                        if ask is not None:
                            self.session.append_user_turn(turn, ask)
                            continue
                    if self.refiner is None or not code:
                        return code
                    affordable = self.budget.affordable(self.session)
                    ask = await self.refiner.review(self.project(), affordable)
                    if ask is None:
                        return self._keep_best(self.refiner, code)
                    self.session.append_user_turn(turn, ask)
                    continue
                limit = self.max_tool_calls_per_turn
                kept = turn.tool_calls[:limit]
                dropped = len(turn.tool_calls) - len(kept) + turn.dropped_calls
                if dropped:
                    self._flooded(limit)
                executed = [await self._run_tool(call, stream) for call in kept]
                if dropped:
                    # Calls past the bound are neither run nor kept in the conversation
                    # (providers/replay.py): the model is told once, with the last result.
                    last = executed[-1]
                    note = (
                        f"{dropped} more tool calls of this turn were dropped, not run: at "
                        f"most {limit} run per turn. Ask again for what still needs doing."
                    )
                    executed[-1] = replace(last, result={**last.result, "dropped_calls": note})
                self.session.append_tool_results(turn, executed)
            raise EngineError(f"Agent exceeded max tool turns ({self.max_turns}).")
        finally:
            await self.session.close()

    def _keep_best(self, refiner: Refiner, code: str) -> str:
        """The variant's code once refinement ended: a round that scored lower is rolled
        back to the best version, every file of it said once more (the entry page last)."""
        if not refiner.rolled_back:
            return code
        self.files = {f.path: f for f in refiner.best}
        self.file = refiner.best[0]
        for file in (*refiner.best[1:], refiner.best[0]):
            self.emit("", CodeSnapshot(file.path, clean_text(file.content)))
        return refiner.best[0].content

    def _flooded(self, limit: int) -> None:
        self.flooded_turns += 1
        if self.flooded_turns >= MAX_FLOODED_TURNS:
            raise EngineError(
                f"Stopped: the model asked for more than {limit} tool calls in one turn "
                f"{self.flooded_turns} times; at most {limit} run per turn "
                "(S2C_MAX_TOOL_CALLS_PER_TURN)."
            )

    def takes_file(self, path: str) -> bool:
        """Whether the project may hold a file at `path`: one it has, or one more."""
        limit = self.context.max_project_files
        return path in self.files or not limit or len(self.files) < limit

    def _new_file_refusal(self, call: ToolCall) -> str | None:
        """Why a create_file may not add the file it names, or None when it may."""
        path = call.arguments.get("path") or (self.file.path if self.file else DEFAULT_PATH)
        if call.name != "create_file" or not isinstance(path, str) or self.takes_file(path):
            return None
        limit = self.context.max_project_files
        return (
            f"Too many files: {too_many_files(len(self.files) + 1, limit)}. Write the "
            "content into one of the project's files instead."
        )

    async def _run_tool(self, call: ToolCall, stream: _TurnStream) -> ExecutedTool:
        self.budget.check(self.session)
        if (refusal := self._new_file_refusal(call)) is not None:
            return self._refuse(call, refusal, stream)
        if (cap := self.max_checks.get(call.name)) is not None:
            self.checks[call.name] += 1
            if self.checks[call.name] > cap:
                message = (
                    f"{call.name} may run at most {cap} times per option; this call was "
                    "not run. Fix what the last check listed."
                )
                return self._refuse(call, message, stream)
        if call.id not in stream.started_calls:
            path = self.file.path if self.file else None
            summary = summarize_tool_input(call.name, call.arguments, path)
            self.emit(call.id, ToolStart(call.name, summary))
        started = time.monotonic()
        context = self.context
        if self.deadline != float("inf"):
            context = replace(context, time_left_s=max(0.0, self.deadline - started))
        if len(self.files) > 1 or (self.file and self.file.path not in self.files):
            context = replace(context, files=tuple(self.files.values()))
        with tracer("s2c.agent").start_as_current_span(
            f"tool {call.name}", attributes={"s2c.tool_call_id": call.id}
        ) as span:
            outcome = await self.tools.execute(call, self.file, context)
            span.set_attribute("s2c.ok", outcome.ok)
        self.tool_records.append(
            ToolCallRecord(call.id, call.name, outcome.ok, int((time.monotonic() - started) * 1000))
        )
        streamed = stream.streamed_paths.get(call.id)
        if outcome.updated_file is not None:
            self.file = self.files[outcome.updated_file.path] = outcome.updated_file
            self.emit(call.id, CodeSnapshot(self.file.path, clean_text(self.file.content)))
        if outcome.built_file is not None:
            # A built project's page (docs/react.md): the entry every client shows; a
            # failed build sends none, so the last good page stays.
            built = self.files[outcome.built_file.path] = outcome.built_file
            self.emit(call.id, CodeSnapshot(built.path, clean_text(built.content)))
        written = outcome.updated_file.path if outcome.updated_file else None
        if streamed is not None and streamed in self.files and streamed != written:
            # The preview streamed into a file the call did not write (it failed, or its
            # path came after its content): that file is put back as it is.
            kept = self.files[streamed]
            self.emit(call.id, CodeSnapshot(kept.path, clean_text(kept.content)))
        self.emit(call.id, ToolResult(call.name, outcome.summary, outcome.ok))
        result = outcome.result
        if self.elided and call.name == "edit_file" and not outcome.ok and self.file:
            # The model never saw the file it missed: show it once, then it edits as usual.
            result = {**result, "current_file": self.file.content}
            self.elided = False
        replay = replay_arguments(call, outcome.ok)
        self.elided = self.elided or replay is not None
        return ExecutedTool(call, outcome.ok, result, outcome.media, replay)

    def _refuse(self, call: ToolCall, message: str, stream: _TurnStream) -> ExecutedTool:
        if call.id not in stream.started_calls:
            self.emit(call.id, ToolStart(call.name, {}))
        self.emit(call.id, ToolResult(call.name, {"error": message}, False))
        return ExecutedTool(call, False, {"error": message})

    def _finalize(self, assistant_text: str, page: _PagePreview | None) -> str:
        """Says every file once more (the entry page last) and returns the entry page."""
        if page is not None and page.scanner.found:
            # The fenced block is the page, as a create_file's content would be.
            self.file = self.files[page.path] = FileState(page.path, page.text)
            self.emit(page.call_id, CodeSnapshot(page.path, clean_text(page.text)))
            result = {"path": page.path, "contentLength": len(page.text), "from": "text"}
            self.emit(page.call_id, ToolResult("create_file", result, True))
            return page.text
        if self.file is None:
            completion = extract_html_content(assistant_text)
            if completion.strip():
                self.file = self.files[DEFAULT_PATH] = FileState(DEFAULT_PATH, completion)
        project = self.project()
        if not project:
            return ""
        for file in (*project[1:], project[0]):
            if file.content:
                self.emit("", CodeSnapshot(file.path, clean_text(file.content)))
        return project[0].content


def _event_id(kind: str, index: int) -> str:
    return f"{kind}-{index}-{secrets.token_hex(4)}"


class _TurnStream:
    """Per-turn streaming state: fresh message ids and the live create_file previews."""

    def __init__(self, engine: VariantEngine) -> None:
        self._engine = engine
        self._assistant_id = _event_id("assistant", engine.index)
        self._thinking_id = _event_id("thinking", engine.index)
        self._previews: dict[str, _Preview] = {}
        self.started_calls: set[str] = set()
        # Every call that streamed, the first `max_tool_calls_per_turn` only: the engine
        # runs no others, so their content never previews.
        self._calls: set[str] = set()
        # The file each create_file's preview streamed into, by call id.
        self.streamed_paths: dict[str, str] = {}
        self.page = _PagePreview(engine) if engine.text_mode else None

    async def on_event(self, event: StreamEvent) -> None:
        emit = self._engine.emit
        if isinstance(event, AssistantDelta):
            if self.page is not None:
                await self._pieces(self.page.scanner.feed(event.text))
            elif event.text:
                emit(self._assistant_id, AssistantDelta(clean_text(event.text)))
        elif isinstance(event, ThinkingDelta):
            if event.text:
                emit(self._thinking_id, ThinkingDelta(clean_text(event.text)))
        elif self._counted(event.call_id) and event.name == "create_file":
            preview = self._previews.get(event.call_id)
            if preview is None:
                preview = self._previews[event.call_id] = _Preview(event.call_id, self._engine)
            if await preview.feed(event):
                self.started_calls.add(event.call_id)
                if preview.path is not None:
                    self.streamed_paths[event.call_id] = preview.path

    def _counted(self, call_id: str) -> bool:
        """Whether `call_id` is among the calls the engine will run (the first ones)."""
        if call_id in self._calls:
            return True
        if len(self._calls) >= self._engine.max_tool_calls_per_turn:
            return False
        self._calls.add(call_id)
        return True

    async def end(self) -> None:
        """The turn's stream ended: what a text-mode scanner still held goes out."""
        if self.page is not None:
            await self._pieces(self.page.scanner.end())
        if self._engine.live is not None:
            await self._engine.live.settle()

    async def _pieces(self, pieces: list[Piece]) -> None:
        assert self.page is not None
        for piece in pieces:
            if piece.page:
                await self.page.feed(piece.text)
            elif piece.text:
                self._engine.emit(self._assistant_id, AssistantDelta(clean_text(piece.text)))


class _CodeStream:
    """One file's streamed content, sent as CodeDeltas (the event log merges consecutive
    ones); content that arrives in one piece is replayed in steps (PreviewReplay)."""

    def __init__(self, call_id: str, engine: VariantEngine) -> None:
        self.call_id = call_id
        self._engine = engine
        self._paused_s = 0.0  # this call's replay pauses so far, bounded by total_s

    async def _forward(self, offset: int, text: str, path: str) -> None:
        replay = self._engine.preview_replay
        pause = replay.pause_s
        # The entry page's deltas carry no path, as before projects; another file's do.
        delta_path = "" if path == DEFAULT_PATH else path
        for i, piece in enumerate(replay.steps(text)):
            if i and self._paused_s + pause <= replay.total_s:
                self._paused_s += pause
                await replay.sleep(pause)
            self._engine.emit(self.call_id, CodeDelta(offset, piece, delta_path))
            offset += len(piece)


class _PagePreview(_CodeStream):
    """A text-mode answer's page: the fenced block's text, previewed as a create_file's
    content is (a ToolStart at its first text, then CodeDeltas at the same pace)."""

    def __init__(self, engine: VariantEngine) -> None:
        super().__init__(_event_id("page", engine.index), engine)
        self.scanner = FenceScanner()
        file = engine.file
        self.path = file.path if file else DEFAULT_PATH
        self._parts: list[str] = []
        self._length = 0
        self._bytes = 0
        self._room, self._rule = page_room(
            engine.files.values(), self.path, engine.context.max_project_bytes
        )

    @property
    def text(self) -> str:
        return "".join(self._parts)

    async def feed(self, text: str) -> None:
        """Previews `text`, the page's next piece; EngineError (which stops the stream)
        when it would take the page past its room: nothing past it is shown or kept."""
        self._bytes += utf8_size(text)
        if self._bytes > self._room:
            raise EngineError(
                f"Stopped: the page in the model's answer grew past {self._room} bytes, "
                f"{self._rule}."
            )
        offset = self._length
        if not offset:
            summary = {
                "path": self.path,
                "contentLength": len(text),
                "preview": summarize_text(text, 200),
            }
            self._engine.emit(self.call_id, ToolStart("create_file", summary))
        self._parts.append(text)
        self._length += len(text)
        await self._forward(offset, clean_text(text), self.path)


class _Preview(_CodeStream):
    """Decodes one streamed create_file's content once and emits it as CodeDeltas."""

    def __init__(self, call_id: str, engine: VariantEngine) -> None:
        super().__init__(call_id, engine)
        self._scanner = ArgumentScanner(("path", "content"))
        self.started = False
        # The file the preview streams into; None: a path the tools refuse, not streamed.
        self.path: str | None = DEFAULT_PATH

    async def feed(self, event: ToolCallDelta) -> bool:
        """Returns True once the tool's start has been announced."""
        emit = self._engine.emit
        for fragment in self._scanner.feed(event.arguments_delta):
            if fragment.key != "content":
                continue
            if not self.started:
                self.started = True
                file = self._engine.file
                path = self._scanner.value("path") or (file.path if file else DEFAULT_PATH)
                # Only a path the tools accept: any other fails the call, and its content
                # must not show up in a client's view of the project, not even for a moment.
                # Nor a file past the project's count, which the engine refuses.
                engine = self._engine
                problem = ProjectPaths(engine.files, engine.context.build).problem(path)
                fits = problem is None and self._engine.takes_file(path)
                self.path = path if fits else None
                summary = {
                    "path": path,
                    "contentLength": len(fragment.text),
                    "preview": summarize_text(fragment.text, 200),
                }
                emit(self.call_id, ToolStart("create_file", summary))
            # The string's opening quote yields an empty fragment; as a delta at offset 0
            # it would replace the page on show (an update's) with nothing for a frame.
            # The first text, at offset 0 too, restarts the file just the same.
            if fragment.text and self.path is not None:
                await self._forward(fragment.offset, clean_text(fragment.text), self.path)
                if self._engine.live is not None:
                    self._engine.live.delta(self.path, fragment.offset, fragment.text)
        return self.started
