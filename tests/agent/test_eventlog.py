"""EventLog: streamed deltas merged per tick, first deltas at once, order and sequences kept."""

from __future__ import annotations

import asyncio
import gc

from services.agent.eventlog import EventLog
from services.agent.events import (
    AssistantDelta,
    CodeDelta,
    Event,
    GenerationComplete,
    Status,
    ThinkingDelta,
    ToolStart,
)


async def read_now(log: EventLog, after: int = 0) -> list[Event]:
    """What is committed after `after`, without waiting for more."""
    if len(log) <= after:
        return []
    async for batch in log.batches(after):
        return list(batch)
    return []


async def read_until(log: EventLog, count: int) -> list[Event]:
    """The first `count` events, waiting for them to be committed."""
    seen: list[Event] = []
    async for batch in log.batches(0):
        seen += batch
        if len(seen) >= count:
            break
    return seen


async def test_a_streams_first_delta_is_committed_at_once_the_rest_on_the_tick() -> None:
    log = EventLog("g", tick_s=3600)  # the tick never fires by itself here
    log.publish(0, "assistant-0-a", AssistantDelta("Hel"))
    log.publish(0, "assistant-0-a", AssistantDelta("lo "))
    log.publish(0, "assistant-0-a", AssistantDelta("world"))
    assert [e.payload for e in await read_now(log)] == [AssistantDelta("Hel")]
    log.tick()
    events = await read_now(log)
    assert [e.payload for e in events] == [AssistantDelta("Hel"), AssistantDelta("lo world")]
    assert [e.sequence for e in events] == [1, 2]


async def test_the_tick_fires_by_itself_and_wakes_a_waiting_watcher() -> None:
    log = EventLog("g", tick_s=0.001)
    log.publish(1, "thinking-1-a", ThinkingDelta("a"))
    log.publish(1, "thinking-1-a", ThinkingDelta("b"))
    seen = await read_until(log, 2)
    assert [(e.variant_index, e.payload) for e in seen] == [
        (1, ThinkingDelta("a")),
        (1, ThinkingDelta("b")),
    ]


async def test_anything_else_commits_pending_deltas_of_every_variant_first() -> None:
    log = EventLog("g", tick_s=3600)
    log.publish(0, "thinking-0-a", ThinkingDelta("x"))
    log.publish(0, "thinking-0-a", ThinkingDelta("y"))
    log.publish(1, "assistant-1-a", AssistantDelta("p"))
    log.publish(1, "assistant-1-a", AssistantDelta("q"))
    log.publish(0, "call-1", ToolStart("create_file", {}))
    log.publish(0, "", GenerationComplete("completed"))
    events = await read_now(log)
    assert [(e.variant_index, e.payload) for e in events] == [
        (0, ThinkingDelta("x")),
        (1, AssistantDelta("p")),
        (0, ThinkingDelta("y")),
        (1, AssistantDelta("q")),
        (0, ToolStart("create_file", {})),
        (0, GenerationComplete("completed")),
    ]
    assert [e.sequence for e in events] == list(range(1, 7))
    assert log.closed
    log.publish(0, "", Status("too late"))
    assert len(log) == 6


async def test_code_merges_only_while_contiguous_and_a_restart_goes_out_at_once() -> None:
    log = EventLog("g", tick_s=3600)
    log.publish(0, "call-1", CodeDelta(0, ""))  # the empty start must not hold back text
    log.publish(0, "call-1", CodeDelta(0, "<ht"))
    log.publish(0, "call-1", CodeDelta(3, "ml>"))
    log.publish(0, "call-1", CodeDelta(6, "<b>"))
    log.publish(0, "call-1", CodeDelta(2, "X"))  # the model's value restarted earlier
    events = await read_now(log)
    assert [e.payload for e in events] == [
        CodeDelta(0, ""),
        CodeDelta(0, "<ht"),
        CodeDelta(3, "ml><b>"),
        CodeDelta(2, "X"),
    ]
    # Replaying the deltas gives the code a browser would show.
    code = ""
    for event in events:
        assert isinstance(event.payload, CodeDelta)
        code = code[: event.payload.offset] + event.payload.text
    assert code == "<hX"


async def test_another_message_or_kind_starts_a_new_stream() -> None:
    log = EventLog("g", tick_s=3600)
    log.publish(0, "thinking-0-a", ThinkingDelta("t"))
    log.publish(0, "assistant-0-a", AssistantDelta("a"))
    log.publish(0, "assistant-0-b", AssistantDelta("b"))
    payloads = [e.payload for e in await read_now(log)]
    assert payloads == [ThinkingDelta("t"), AssistantDelta("a"), AssistantDelta("b")]
    # Equal dataclasses of different kinds must never merge.
    assert [type(p) for p in payloads] == [ThinkingDelta, AssistantDelta, AssistantDelta]


async def test_a_watcher_attaching_at_any_sequence_reads_what_a_live_one_read() -> None:
    log = EventLog("g", tick_s=3600)
    live: list[Event] = []

    async def watch() -> None:
        async for batch in log.batches(0):
            live.extend(batch)

    watcher = asyncio.create_task(watch())
    for i in range(30):
        log.publish(i % 3, f"assistant-{i % 3}-a", AssistantDelta(str(i)))
        if i % 7 == 0:
            log.tick()
        await asyncio.sleep(0)
    log.publish(0, "", GenerationComplete("completed"))
    await watcher
    assert [e.sequence for e in live] == list(range(1, len(log) + 1))
    for after in range(len(log) + 1):
        late = [e async for batch in log.batches(after) for e in batch]
        assert late == live[after:]
    texts = {
        v: "".join(
            e.payload.text
            for e in live
            if e.variant_index == v and isinstance(e.payload, AssistantDelta)
        )
        for v in range(3)
    }
    assert texts == {v: "".join(str(i) for i in range(v, 30, 3)) for v in range(3)}


async def test_committed_deltas_are_not_tracked_by_the_cycle_collector() -> None:
    log = EventLog("g", tick_s=3600)
    for i in range(100):
        log.publish(0, "call-1", CodeDelta(i, "x"))
    log.tick()
    gc.collect()
    # The retained logs must add nothing to full collections (see eventlog.py).
    assert not any(gc.is_tracked(record) for record in log._records)


async def test_code_arriving_a_code_tick_after_the_last_commit_goes_out_at_once() -> None:
    # Leading edge: the preview's setCode shows code as soon as the agent commits it.
    log = EventLog("g", tick_s=3600, code_tick_s=0)
    log.publish(0, "call-1", CodeDelta(0, "<ht"))
    log.publish(0, "call-1", CodeDelta(3, "ml>"))
    log.publish(0, "call-1", CodeDelta(6, "<b>"))
    log.publish(0, "thinking-0-a", ThinkingDelta("t"))  # text keeps the long tick
    log.publish(0, "thinking-0-a", ThinkingDelta("u"))
    assert [e.payload for e in await read_now(log)] == [
        CodeDelta(0, "<ht"),
        CodeDelta(3, "ml>"),
        CodeDelta(6, "<b>"),
        ThinkingDelta("t"),
    ]


async def test_code_within_a_code_tick_is_merged_and_committed_by_the_timer() -> None:
    log = EventLog("g", tick_s=3600, code_tick_s=0.001)
    log.publish(0, "call-1", CodeDelta(0, "<ht"))
    log.publish(0, "call-1", CodeDelta(3, "ml>"))  # within the code tick of the first
    log.publish(0, "call-1", CodeDelta(6, "<b>"))
    seen = await read_until(log, 2)
    assert [e.payload for e in seen] == [CodeDelta(0, "<ht"), CodeDelta(3, "ml><b>")]


async def test_the_code_tick_is_never_longer_than_the_tick() -> None:
    log = EventLog("g", tick_s=0)
    log.publish(0, "call-1", CodeDelta(0, "a"))
    log.publish(0, "call-1", CodeDelta(1, "b"))
    assert [e.payload for e in await read_now(log)] == [CodeDelta(0, "a"), CodeDelta(1, "b")]


async def test_a_burst_within_the_default_code_tick_leaves_as_one_event() -> None:
    # The default code tick (10 ms) is far shorter than this tick: the first delta goes
    # out at once, the burst after it as one event, and code arriving within the code
    # tick of that commit waits for the next.
    log = EventLog("g", tick_s=3600)
    for i in range(5):
        log.publish(0, "call-1", CodeDelta(3 * i, f"<{i}>"))
    assert [e.payload for e in await read_now(log)] == [CodeDelta(0, "<0>")]
    log.tick()
    log.publish(0, "call-1", CodeDelta(15, "<5>"))  # within the tick that just committed
    assert [e.payload for e in await read_now(log, 1)] == [CodeDelta(3, "<1><2><3><4>")]
    log.tick()
    assert [e.payload for e in await read_now(log, 2)] == [CodeDelta(15, "<5>")]


async def test_a_code_tick_due_within_a_millisecond_then_a_text_tick_both_fire() -> None:
    # uvloop's call_at gives a plain Handle for a time under a millisecond away; arming
    # the text tick after it must not ask that handle when it is due.
    log = EventLog("g", tick_s=0.002, code_tick_s=0.0005)
    log.publish(1, "assistant-1-a", AssistantDelta("a"))
    log.publish(0, "create_file-0-a", CodeDelta(0, "<ht"))
    log.publish(0, "create_file-0-a", CodeDelta(3, "ml>"))  # due in under 0.5 ms
    log.publish(1, "assistant-1-a", AssistantDelta("b"))  # arms the text tick after it
    seen = await read_until(log, 4)
    assert sorted((e.variant_index, e.payload) for e in seen[2:]) == [
        (0, CodeDelta(3, "ml>")),
        (1, AssistantDelta("b")),
    ]


async def test_batched_code_goes_out_per_variant_once_a_batch_waits() -> None:
    # A setCode client shows code once it grew by a batch: the variant whose batch is
    # full is committed at once, alone; another variant's shorter rest keeps waiting.
    log = EventLog("g", tick_s=3600, code_tick_s=0, code_batch_chars=8)
    log.publish(0, "call-0", CodeDelta(0, "<a>"))  # a stream's first delta: at once
    log.publish(1, "call-1", CodeDelta(0, "<b>"))
    log.publish(0, "call-0", CodeDelta(3, "abc"))
    log.publish(1, "call-1", CodeDelta(3, "xyz"))
    assert len(log) == 2
    log.publish(0, "call-0", CodeDelta(6, "defgh"))  # variant 0: 8 characters wait
    events = await read_now(log, 2)
    assert [(e.variant_index, e.payload) for e in events] == [(0, CodeDelta(3, "abcdefgh"))]
    log.publish(1, "call-1", CodeDelta(6, "!"))  # variant 1: 4 characters, still short
    assert len(log) == 3
    log.publish(1, "create_file-1", ToolStart("create_file", {}))  # anything else flushes
    flushed = await read_now(log, 3)
    assert [e.payload for e in flushed][:1] == [CodeDelta(3, "xyz!")]


async def test_batched_code_short_of_a_batch_leaves_once_its_stream_is_quiet() -> None:
    log = EventLog("g", tick_s=3600, code_tick_s=0, code_batch_chars=1000)
    log.publish(0, "call-0", CodeDelta(0, "<a>"))
    log.publish(0, "call-0", CodeDelta(3, "<b>"))
    seen = await read_until(log, 2)
    assert [e.payload for e in seen] == [CodeDelta(0, "<a>"), CodeDelta(3, "<b>")]


async def test_a_full_batch_within_the_code_tick_leaves_at_the_ticks_end() -> None:
    log = EventLog("g", tick_s=3600, code_tick_s=0.002, code_batch_chars=2)
    log.publish(0, "call-0", CodeDelta(0, "<a>"))  # committed: the code tick starts
    log.publish(0, "call-0", CodeDelta(3, "<b>"))  # a full batch, within that tick
    assert len(log) == 1
    seen = await read_until(log, 2)
    assert [e.payload for e in seen] == [CodeDelta(0, "<a>"), CodeDelta(3, "<b>")]
