"""bench/preview.py's gRPC accounting: code_delta payload and wire bytes, paced by the tick."""

from __future__ import annotations

import pytest
from s2c.agent.v1 import agent_service_pb2 as pb

from bench.chain import GRPC_TRANSPORT, delta_lags, payload_bytes, wire_bytes
from bench.preview import frontier, timed
from services.agent.eventlog import DEFAULT_TICK_S
from services.gateway.preview_policy import PreviewPolicyConfig


def code_event(offset: int, text: str) -> pb.GenerationEvent:
    return pb.GenerationEvent(
        generation_id="0f8fad5b-d9cb-469f-a165-70867728950e",
        sequence=7,
        variant_index=1,
        event_id="call_Xq3vLr8mT2pWc9ZkYb4nHs1d",
        code_delta=pb.CodeDelta(offset=offset, text=text),
    )


def test_payload_counts_utf8_bytes_of_append_only_deltas() -> None:
    events = [code_event(0, "<p>café"), code_event(7, "</p>")]
    assert payload_bytes(events, "<p>café</p>") == len("<p>café</p>".encode())
    with pytest.raises(AssertionError, match="at 3, code ended at 7"):
        payload_bytes([code_event(0, "<p>café"), code_event(3, "</p>")], "<p>café</p>")
    with pytest.raises(AssertionError, match="do not add up"):
        payload_bytes(events, "<p>café</p>!")


def test_wire_bytes_are_protobuf_plus_framing_and_trimming_drops_only_the_ids() -> None:
    event = code_event(0, "x" * 8)
    assert wire_bytes([event, event]) == 2 * (event.ByteSize() + GRPC_TRANSPORT)
    saved = len(event.generation_id) + 2 + len(event.event_id) + 2  # each: tag, length, text
    assert wire_bytes([event], trim_ids=True) == wire_bytes([event]) - saved


def test_a_paced_stream_leaves_as_one_code_delta_per_tick_seen_within_it() -> None:
    # 50 deltas/s of 8 characters: two model deltas per 40 ms tick, one event per tick.
    _, _, chain = timed(4, 400.0, PreviewPolicyConfig(), None)
    ticks = chain.arrivals[-1][0] / DEFAULT_TICK_S
    assert ticks - 2 <= len(chain.code_deltas) <= ticks + 2
    lags = delta_lags(chain.code_seen, chain.arrivals)
    assert 0 < max(lags) <= DEFAULT_TICK_S + 1e-9


def test_the_frontier_trades_freshness_for_bytes_as_the_tick_grows() -> None:
    rows = frontier(4, 400.0, PreviewPolicyConfig())
    grpc_p99 = [float(row[5]) for row in rows]
    wire = [float(row[9].rstrip("x")) for row in rows]
    assert grpc_p99 == sorted(grpc_p99)
    assert wire == sorted(wire, reverse=True)
    assert {row[8] for row in rows} == {"1.00x"}  # nothing resent at any tick
