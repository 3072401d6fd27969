"""A generation's event log, and the one place where streamed deltas are coalesced.

Models stream about a token per delta. Forwarding each as its own event would cost one
log entry, one gRPC message and a wake-up on every side per token — the agent's largest
cost under load. So the log commits a stream's first delta at once (the UI shows thinking,
text and the preview without delay) and merges the deltas that continue it — same
variant, same message or tool call, contiguous code — into one pending event that is
committed on the next *tick*, at most `tick_s` later. Code is paced by a shorter code
tick (10 ms, stretched up to 40 ms on a loaded agent: `CodePace`) and on its leading
edge: a code delta arriving a code tick after the last commit is committed at once,
later ones within that tick join it. The gateway's `setCode`
shows the whole file, so every millisecond code waits here is one the preview lags by
(docs/architecture.md, "The code tick": a longer one costs setCode freshness for bytes,
and the bytes are cut per event instead). Anything else (a tool start, a snapshot, a
completion) commits every pending delta first and wakes watchers at once.

A client that shows code only once it grew by some characters (upstream's `setCode`
client: 40) says so (`code_batch_chars`), and then a variant's code is committed when
that much of it waits (still at most once per code tick), or when its stream has been
quiet for `CODE_QUIET_S`: each message is one the client acts on, and what it would not
show yet costs no wake-up on either side (docs/architecture.md, "Code batches").

One timer per generation and tick replaces a timer per stream, and watchers wake once
per tick, reading everything committed since, so a batched stream carries many events per
message. Committed events never change: sequence numbers are 1-based and gapless, and a
watcher re-attaching at any sequence reads exactly what it would have read live.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from services.agent.events import (
    AssistantDelta,
    CodeDelta,
    Event,
    GenerationComplete,
    Payload,
    ThinkingDelta,
)

RECORD_OVERHEAD = 160  # a record's tuple and string headers (CPython 3.11, 64-bit)

# Long enough that a 50-token/s stream merges two deltas per event, short enough to stay
# under what a reader notices (25 updates a second). The gateway sends what a batch
# carries, so this is also the pace of the browser's text frames.
DEFAULT_TICK_S = 0.04
# Code commits at most this often: at 50 deltas/s each delta goes out at once, a burst is
# merged into one event per 10 ms (100 messages/s per stream at most). The gateway's
# setCode timer waits this long for the next batch (preview_policy.arrival_grace_s).
# bench/preview.py table 5: 40 ms would halve the events but cost setCode 21 ms at p50.
DEFAULT_CODE_TICK_S = 0.01
# The longest a loaded agent stretches the code tick to (CodePace): the text tick's.
MAX_CODE_TICK_S = 0.04
# With code batches: how long a variant's stream must pause before code short of a batch
# is committed. Half the gateway's idle flush (preview_policy.idle_s), so a paused stream
# still shows within 150 ms; a model's steady stream (a delta every 10-30 ms) never
# pauses this long, so it costs nothing there.
CODE_QUIET_S = 0.05
# The largest `code_batch_chars` a request may ask for.
MAX_CODE_BATCH_CHARS = 65_536

Streamed = AssistantDelta | ThinkingDelta | CodeDelta

# Committed events are kept as plain tuples of strings and numbers and become `Event`s
# only when read. The cycle collector stops tracking such tuples, so the logs an agent
# keeps (about a thousand events per variant) add nothing to its full collections; as
# dataclasses they made each one stall the loop for 100+ ms under load. The tuples'
# shapes are known to the four functions below and nowhere else.
Record = tuple[Any, ...]
_KINDS: tuple[type[Streamed], ...] = (AssistantDelta, ThinkingDelta, CodeDelta)
_STREAMED_FIELDS = 6


def _streamed_record(
    variant_index: int, event_id: str, kind: type[Streamed], offset: int, text: str, path: str
) -> Record:
    """A streamed delta's record (`offset` and `path` only count for code)."""
    return (variant_index, event_id, _KINDS.index(kind), offset, text, path)


def _record(variant_index: int, event_id: str, payload: Payload) -> Record:
    """Any other event's record: its payload as it is (it holds no cycle)."""
    return (variant_index, event_id, payload)


def _decoded(record: Record) -> tuple[int, str, Payload]:
    """A record's variant index, event id and payload."""
    if len(record) != _STREAMED_FIELDS:
        variant_index, event_id, payload = record
        return variant_index, event_id, payload
    variant_index, event_id, kind, offset, text, path = record
    cls = _KINDS[kind]
    return (
        variant_index,
        event_id,
        CodeDelta(offset, text, path) if issubclass(cls, CodeDelta) else cls(text),
    )


def _held_bytes(record: Record) -> int:
    """Roughly the bytes a record holds besides its tuple (RECORD_OVERHEAD)."""
    if len(record) != _STREAMED_FIELDS:
        return len(record[1]) + _size(record[2])
    return len(record[1]) + len(record[4])


class CodePace:
    """The code tick of every generation on one agent, stretched with its load.

    Every code commit is a message to each watcher of the generation, and at 50 deltas/s
    per variant nearly every 10 ms tick of a four-variant generation commits: an agent's
    messages grow with its generations, and each costs the agent and the gateway far more
    than the characters it carries (bench/load_real.py at 50 generations: a 25 ms tick
    instead of 10 ms took ~40 % of a core off the machine and the p99 from 169 to 127 ms).
    So the tick is `generations / messages_per_s`, never under `base_s` (the freshness
    of a lightly loaded agent) nor over `max_s`: past `messages_per_s × base_s`
    generations an agent sends about `messages_per_s` code messages a second, each
    generation's share falling as they grow. The generation manager counts them here.
    """

    def __init__(
        self,
        messages_per_s: float = 0.0,
        base_s: float = DEFAULT_CODE_TICK_S,
        max_s: float = MAX_CODE_TICK_S,
    ) -> None:
        self._messages_per_s = messages_per_s  # 0: the tick stays at base_s
        self._base_s = base_s
        self._max_s = max(base_s, max_s)
        self.generations = 0
        self.tick_s = base_s

    def started(self) -> None:
        self.generations += 1
        self._retick()

    def ended(self) -> None:
        self.generations -= 1
        self._retick()

    def _retick(self) -> None:
        if self._messages_per_s > 0:
            stretched = self.generations / self._messages_per_s
            self.tick_s = min(self._max_s, max(self._base_s, stretched))


@dataclass(slots=True)
class _Stream:
    """The open stream of one variant: what a following delta must match to merge."""

    kind: type[Streamed]
    event_id: str
    end: int  # CodeDelta: where the code ends now; text: unused
    start: int = 0  # CodeDelta: offset of the pending text
    path: str = ""  # CodeDelta: the file (one per create_file call, so per event id)
    parts: list[str] = field(default_factory=list)  # pending, not yet committed
    last_at: float = 0.0  # code batches: loop time of the latest delta


class EventLog:
    def __init__(
        self,
        generation_id: str,
        tick_s: float = DEFAULT_TICK_S,
        code_tick_s: float | None = None,
        pace: CodePace | None = None,
        code_batch_chars: int = 0,
    ) -> None:
        """`pace`: the agent's shared code tick; without it a fixed one, `code_tick_s` (by
        default the shorter of 10 ms and the text tick). `code_batch_chars`: commit code
        in batches of that many characters (see the module doc); 0: each delta at once."""
        self._generation_id = generation_id
        self._tick_s = tick_s
        self._batch_chars = code_batch_chars
        self._code_timer: asyncio.TimerHandle | None = None
        self._code_due = 0.0
        if pace is None:
            pace = CodePace(
                base_s=min(tick_s, DEFAULT_CODE_TICK_S) if code_tick_s is None else code_tick_s
            )
        self._pace = pace
        self._ticked_at = -float("inf")  # loop time of the last tick
        self._records: list[Record] = []
        self._open: dict[int, _Stream] = {}
        self._pending = 0  # streams with uncommitted parts
        # uvloop's call_at returns a plain Handle, without `when()`, for a time under a
        # millisecond away: the due time is kept here.
        self._timer: asyncio.Handle | None = None
        self._timer_due = 0.0
        self._waiters: list[asyncio.Future[None]] = []
        # Cached: on Python 3.11 every asyncio.get_running_loop() is a getpid() system call,
        # which was the agent's largest single cost under load when made per delta.
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self.bytes = 0  # approximate memory the committed records hold (retention.py)

    def __len__(self) -> int:
        return len(self._records)

    def publish(self, variant_index: int, event_id: str, payload: Payload) -> None:
        if self.closed:
            return
        if isinstance(payload, AssistantDelta | ThinkingDelta | CodeDelta):
            stream = self._open.get(variant_index)
            code = isinstance(payload, CodeDelta)
            if (
                stream is not None
                and stream.kind is type(payload)
                and stream.event_id == event_id
                # Code merges while it grows contiguously, once some of it is out (an
                # empty first delta must not hold back the first visible text).
                and (
                    not isinstance(payload, CodeDelta)
                    or (payload.offset == stream.end > 0 and payload.path == stream.path)
                )
            ):
                first_part = not stream.parts
                if first_part:
                    self._pending += 1
                    stream.start = stream.end
                stream.parts.append(payload.text)
                if not code:
                    if first_part:
                        self._arm(self._tick_s)
                    return
                stream.end += len(payload.text)
                if self._batch_chars:
                    self._batched(variant_index, stream)
                    return
                if first_part:
                    wait = self._ticked_at + self._pace.tick_s - self._running_loop().time()
                    if wait <= 0:
                        self.tick()
                    else:
                        self._arm(wait)
                return
            # A new stream: its first delta goes out at once.
            self._commit_variant(variant_index)
            end = payload.offset + len(payload.text) if isinstance(payload, CodeDelta) else 0
            path = payload.path if isinstance(payload, CodeDelta) else ""
            if code:
                self._running_loop()  # so the tick below records when code was committed
            self._open[variant_index] = _Stream(type(payload), event_id, end, path=path)
        else:
            self._commit_all()
            self._open.pop(variant_index, None)
        if isinstance(payload, CodeDelta):
            self._append(
                _streamed_record(
                    variant_index, event_id, CodeDelta, payload.offset, payload.text, payload.path
                )
            )
        elif isinstance(payload, Streamed):
            record = _streamed_record(variant_index, event_id, type(payload), 0, payload.text, "")
            self._append(record)
        else:
            self._append(_record(variant_index, event_id, payload))
        if isinstance(payload, GenerationComplete):
            self.closed = True
        self.tick()

    def _arm(self, delay_s: float) -> None:
        """Makes sure the next tick comes within `delay_s`."""
        loop = self._running_loop()
        due = loop.time() + delay_s
        if self._timer is not None:
            if self._timer_due <= due:
                return
            self._timer.cancel()
        self._timer = loop.call_at(due, self.tick)
        self._timer_due = due

    def _batched(self, variant_index: int, stream: _Stream) -> None:
        """A code delta joined `stream`: commits the variant's code when it is due, else
        makes sure the code timer comes in time."""
        now = stream.last_at = self._running_loop().time()
        due = self._code_due_at(stream, self._ticked_at + self._pace.tick_s)
        if due <= now:
            self._commit_variant(variant_index)
            self._ticked_at = now
            self._wake()
        elif self._code_timer is None or due < self._code_due:
            if self._code_timer is not None:
                self._code_timer.cancel()
            self._arm_code(due)

    def _code_due_at(self, stream: _Stream, tick_end: float) -> float:
        """When a stream's pending code is committed: at the code tick's end once a batch
        of it waits, else once the stream has been quiet for CODE_QUIET_S."""
        if stream.end - stream.start >= self._batch_chars:
            return tick_end
        return stream.last_at + CODE_QUIET_S

    def _arm_code(self, due: float) -> None:
        self._code_timer = self._running_loop().call_at(due, self._code_timer_fired)
        self._code_due = due

    def _code_timer_fired(self) -> None:
        """Commits the code that is due (a batch the tick held back, or a quiet stream's
        rest) and waits for the next that will be: one timer per generation, moved only
        when it fires rather than per delta."""
        self._code_timer = None
        now = self._running_loop().time()
        tick_end = self._ticked_at + self._pace.tick_s
        next_due = float("inf")
        committed = False
        for index, stream in list(self._open.items()):
            if stream.parts and stream.kind is CodeDelta:
                due = self._code_due_at(stream, tick_end)
                if due <= now:
                    self._commit_variant(index)
                    committed = True
                else:
                    next_due = min(next_due, due)
        if committed:
            self._ticked_at = now
            self._wake()
        if next_due < float("inf"):
            self._arm_code(next_due)

    def tick(self) -> None:
        """Commits every pending delta and wakes the watchers."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._loop is not None:
            self._ticked_at = self._loop.time()
        self._commit_all()
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():  # a watcher that was cancelled meanwhile
                waiter.set_result(None)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def _commit_all(self) -> None:
        if self._pending:
            for index in list(self._open):
                self._commit_variant(index)

    def _commit_variant(self, variant_index: int) -> None:
        stream = self._open.get(variant_index)
        if stream is None or not stream.parts:
            return
        text = "".join(stream.parts)
        stream.parts = []
        self._pending -= 1
        self._append(
            _streamed_record(
                variant_index, stream.event_id, stream.kind, stream.start, text, stream.path
            )
        )

    def _append(self, record: Record) -> None:
        self._records.append(record)
        self.bytes += RECORD_OVERHEAD + _held_bytes(record)

    def _event(self, sequence: int, record: Record) -> Event:
        variant_index, event_id, payload = _decoded(record)
        return Event(self._generation_id, sequence, variant_index, event_id, payload)

    async def batches(self, after_sequence: int = 0) -> AsyncIterator[Sequence[Event]]:
        """Committed events with sequence > after_sequence, in order, as many at a time
        as are there; live until the log closes."""
        position = max(0, after_sequence)
        while True:
            records = self._records
            if position < len(records):
                start, position = position, len(records)
                yield [self._event(start + i + 1, r) for i, r in enumerate(records[start:position])]
                continue
            if self.closed:
                return
            waiter = self._running_loop().create_future()
            self._waiters.append(waiter)
            await waiter


def _size(value: Any) -> int:
    """Roughly the bytes `value` holds: its characters, plus a slot per item. Tool inputs
    and outputs are JSON-shaped; only their big strings (files, screenshots) matter."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, dict):
        return sum(_size(k) + _size(v) + 16 for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_size(v) + 8 for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return sum(_size(getattr(value, f.name)) for f in fields(value))
    return 8
