"""The load model of `bench/load.py`: the demo model at token granularity, on a clock, stamped.

It plays exactly the demo's script (`services.agent.demo.demo_script`: think, create
`index.html`, edit it, summarise) with three changes that make it a model *server* under
load rather than a demo:

* **Token-sized deltas.** Every step (thinking, text, tool-call arguments) is re-cut into
  `chunk_chars`-character deltas (default 4, about one token), the granularity at which
  the real APIs stream, instead of the demo's 12/48-character pieces.
* **A fixed schedule.** Delta k of a turn is due at `turn start + k × pace`, whatever the
  agent's event loop is doing: a late wake-up does not slow the model down, the deltas that
  fell due meanwhile are delivered at once (yielding between them), as a socket backlog
  would be read. So the offered load is fixed, and a saturated agent shows up as latency.
* **Stamps.** Each thinking/assistant delta starts with `[t:<µs>]`, the CLOCK_MONOTONIC time
  (µs) at which the model server was due to send it. The gateway passes text through
  verbatim, so a browser on the same machine reads the stamps out of `thinking`/`assistant`
  frames and gets the added latency of each delta (model server → browser). Tool-call
  arguments are not stamped: the page and its edit stay the demo's, byte for byte.

Only the benchmark uses it: run the agent as `python -m bench.loadmodel [s2c agent options]`
from the repository root, with `S2C_DEMO_PACE_MS` (ms between deltas; 20 ms of 4-character deltas is
200 characters/s, about 50 tokens/s), `S2C_LOAD_CHUNK_CHARS` (default 4) and
`S2C_LOAD_STAMPS` (default 1). The launcher runs `s2c agent` with `LoadSessions` as its model
sessions (`run_agent`'s `sessions` seam, through which the default providers go too): the
demo model is the load model, every other model is untouched.
With `S2C_LOAD_STATS=PATH` it also counts the model's deltas and keeps `<monotonic s>
<deltas>` in PATH.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field

from services.agent.demo import demo_script
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    OnEvent,
    PromptMessage,
    ProviderSession,
    ProviderTurn,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
)
from services.agent.providers.factory import ProviderSessions, SessionRequest
from services.agent.providers.scripted import (
    CallTool,
    Say,
    ScriptedTurn,
    Step,
    Think,
    TurnSource,
    chunk_text,
)
from services.agent.settings import AgentSettings

DEFAULT_CHUNK_CHARS = 4
STAMP_PATTERN = re.compile(r"\[t:(\d+)\]")


def stamp(due_s: float) -> str:
    """The marker put in front of a text delta: its due time in CLOCK_MONOTONIC µs."""
    return f"[t:{int(due_s * 1_000_000)}]"


def read_stamps(text: str) -> list[int]:
    """Due times (CLOCK_MONOTONIC µs) of the stamped deltas in a frame's text."""
    return [int(m) for m in STAMP_PATTERN.findall(text)]


def rechunk(script: TurnSource, chunk_chars: int) -> TurnSource:
    """`script` with every step's text re-cut into `chunk_chars`-character deltas."""

    def recut(step: Step) -> Step:
        if isinstance(step, Think):
            return Think(chunk_text("".join(step.chunks), chunk_chars))
        if isinstance(step, Say):
            return Say(chunk_text("".join(step.chunks), chunk_chars))
        return CallTool(step.id, step.name, chunk_text("".join(step.argument_chunks), chunk_chars))

    def next_turn(turn: int, results: Sequence[Sequence[ExecutedTool]]) -> ScriptedTurn | None:
        scripted = script(turn, results)
        if scripted is None:
            return None
        return ScriptedTurn(tuple(recut(s) for s in scripted.steps), scripted.usage)

    return next_turn


class LoadStats:
    """Counts the model's deltas; a thread writes `<monotonic s> <deltas>` to `path` every
    `interval_s` (atomically). The events the agent sends the bench reads from its
    /metrics (`s2c_agent_events_sent_total`)."""

    def __init__(self, path: str, interval_s: float = 0.25) -> None:
        self.deltas = 0
        self._path = path
        self._interval_s = interval_s

    def start(self) -> None:
        threading.Thread(target=self._write_forever, name="load-stats", daemon=True).start()

    def _write_forever(self) -> None:
        temporary = self._path + ".tmp"
        while True:
            with open(temporary, "w") as f:
                f.write(f"{time.monotonic()} {self.deltas}\n")
            os.replace(temporary, self._path)
            time.sleep(self._interval_s)


class ServerClock:
    """The model server's one clock. A delta due at t waits for the first `quantum_s` tick
    at or after t, and every delta due in one tick is released by a single timer, as one
    socket read releases what arrived together. (A timer per delta would put hundreds of
    thousands of heap operations a second on the agent's loop that a real network stream
    does not cost it.) Waiters that are cancelled simply leave."""

    def __init__(self, quantum_s: float = 0.001) -> None:
        self._quantum_s = quantum_s
        self._ticks: dict[int, list[asyncio.Future[None]]] = {}
        # Cached: asyncio.get_running_loop() is a getpid() system call on Python 3.11.
        self._loop: asyncio.AbstractEventLoop | None = None

    def wait_until(self, due: float) -> Awaitable[None]:
        """What to await until `due` (a plain function: one coroutine less per delta)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        loop = self._loop
        tick = math.ceil(due / self._quantum_s)
        if tick * self._quantum_s <= loop.time():
            return asyncio.sleep(0)  # late: deliver at once, but let others run between
        waiters = self._ticks.get(tick)
        if waiters is None:
            waiters = self._ticks[tick] = []
            loop.call_at(tick * self._quantum_s, self._release, tick)
        future: asyncio.Future[None] = loop.create_future()
        waiters.append(future)
        return future

    def _release(self, tick: int) -> None:
        for future in self._ticks.pop(tick):
            if not future.done():
                future.set_result(None)


@dataclass
class LoadSession:
    """Replays a script on a fixed schedule, `pace_s` between deltas, stamping text deltas."""

    script: TurnSource
    pace_s: float
    clock: ServerClock
    stamps: bool = True
    stats: LoadStats | None = None
    tool_results: list[list[ExecutedTool]] = field(default_factory=list)
    _turn: int = 0
    _due: float = 0.0

    async def stream_turn(self, on_event: OnEvent) -> ProviderTurn:
        turn = self.script(self._turn, self.tool_results) or ScriptedTurn(())
        self._due = time.monotonic()
        text: list[str] = []
        calls: list[ToolCall] = []
        for step in turn.steps:
            if isinstance(step, Think | Say):
                for chunk in step.chunks:
                    await self._tick()
                    marked = stamp(self._due) + chunk if self.stamps else chunk
                    if isinstance(step, Think):
                        await on_event(ThinkingDelta(marked))
                    else:
                        text.append(chunk)
                        await on_event(AssistantDelta(marked))
            else:
                for chunk in step.argument_chunks:
                    await self._tick()
                    await on_event(ToolCallDelta(step.id, step.name, chunk))
                calls.append(_parse(step))
        self._turn += 1
        return ProviderTurn("".join(text), calls, turn.usage, native=turn)

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        self.tool_results.append(list(executed))

    def append_user_turn(self, turn: ProviderTurn, message: PromptMessage) -> None:
        pass  # the load model's pages are never refined (its requests carry no images)

    def total_cost_usd(self) -> float:
        return 0.0

    async def close(self) -> None:
        return None

    def _tick(self) -> Awaitable[None]:
        """What to await until the next delta is due (only yields when already late)."""
        self._due += self.pace_s
        if self.stats is not None:
            self.stats.deltas += 1
        return self.clock.wait_until(self._due)


def _parse(step: CallTool) -> ToolCall:
    raw = "".join(step.argument_chunks)
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        return ToolCall(step.id, step.name, {}, invalid_json=raw)
    if not isinstance(arguments, dict):
        return ToolCall(step.id, step.name, {}, invalid_json=raw)
    return ToolCall(step.id, step.name, arguments)


@dataclass(frozen=True, slots=True)
class LoadModelConfig:
    pace_s: float = 0.02
    chunk_chars: int = DEFAULT_CHUNK_CHARS
    stamps: bool = True
    stats_path: str = ""  # where LoadStats are written; empty: not counted

    @classmethod
    def from_env(cls) -> LoadModelConfig:
        return cls(
            pace_s=int(os.environ.get("S2C_DEMO_PACE_MS", "20")) / 1000,
            chunk_chars=int(os.environ.get("S2C_LOAD_CHUNK_CHARS", str(DEFAULT_CHUNK_CHARS))),
            stamps=os.environ.get("S2C_LOAD_STAMPS", "1") not in ("0", "false", "no"),
            stats_path=os.environ.get("S2C_LOAD_STATS", ""),
        )


class LoadSessions:
    """The agent's model sessions with the demo model replaced by the load model."""

    def __init__(self, settings: AgentSettings, config: LoadModelConfig) -> None:
        self._providers = ProviderSessions(settings)
        self._config = config
        self._clock = ServerClock()
        self.stats = LoadStats(config.stats_path) if config.stats_path else None
        if self.stats is not None:
            self.stats.start()

    def __call__(self, wanted: SessionRequest) -> ProviderSession:
        if wanted.spec.provider != "demo":
            return self._providers(wanted)
        config = self._config
        request = wanted.request
        script = demo_script(
            request.prompt.text, request.stack, wanted.variant_index, [t.name for t in wanted.tools]
        )
        return LoadSession(
            rechunk(script, config.chunk_chars),
            config.pace_s,
            self._clock,
            config.stamps,
            self.stats,
        )


def main(argv: Sequence[str] | None = None) -> None:
    """`s2c agent ARGV` with the demo model replaced by the load model."""
    from services.cli import build_parser, run_agent

    config = LoadModelConfig.from_env()
    args = build_parser().parse_args(["agent", *(sys.argv[1:] if argv is None else argv)])
    run_agent(args, lambda settings: LoadSessions(settings, config))


if __name__ == "__main__":
    main()
