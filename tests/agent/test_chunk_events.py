"""How the servicer cuts a batch of events into messages."""

from __future__ import annotations

from s2c.agent.v1 import agent_service_pb2 as pb

from services.agent import events as ev
from services.agent.convert import event_to_proto
from services.agent.servicer import MAX_BATCH_BYTES, chunk_events


def _events(payloads: list[ev.Payload]) -> list[ev.Event]:
    return [
        ev.Event("gen-1", sequence, sequence % 3, f"call-{sequence}", payload)
        for sequence, payload in enumerate(payloads, start=1)
    ]


def test_messages_carry_every_event_as_event_to_proto_makes_it() -> None:
    events = _events(
        [
            ev.CodeDelta(0, "<html>"),
            ev.AssistantDelta("Héllo 👋"),
            ev.ThinkingDelta("hm"),
            ev.CodeSnapshot("index.html", "<html></html>"),
            ev.CodeDelta(6, "</html>"),
        ]
    )
    messages = list(chunk_events(events, pb.WatchGenerationResponse))
    assert len(messages) == 1
    assert list(messages[0].events) == [event_to_proto(e) for e in events]
    # A code delta's ids are implied by the stream.
    assert messages[0].events[0].generation_id == ""
    assert messages[0].events[1].generation_id == "gen-1"


def test_big_deltas_and_snapshots_are_cut_under_the_limit() -> None:
    third = MAX_BATCH_BYTES // 3
    events = _events(
        [
            ev.CodeDelta(0, "a" * third),
            ev.CodeDelta(third, "é" * (third // 2)),  # two UTF-8 bytes each
            ev.AssistantDelta("👋" * (third // 4)),  # four
            ev.CodeSnapshot("index.html", "b" * (2 * third)),
            ev.CodeDelta(0, "c" * 10),
        ]
    )
    messages = list(chunk_events(events, pb.GenerateCodeResponse))
    assert len(messages) > 1
    assert all(0 < m.ByteSize() <= MAX_BATCH_BYTES for m in messages)
    sent = [e for m in messages for e in m.events]
    assert sent == [event_to_proto(e) for e in events]


def test_one_event_over_the_limit_goes_alone() -> None:
    events = _events([ev.CodeDelta(0, "x"), ev.CodeDelta(1, "y" * MAX_BATCH_BYTES)])
    messages = list(chunk_events(events, pb.GenerateCodeResponse))
    assert [len(m.events) for m in messages] == [1, 1]


def test_no_events_no_message() -> None:
    assert list(chunk_events([], pb.GenerateCodeResponse)) == []
