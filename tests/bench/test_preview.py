"""bench/preview.py's gRPC accounting: code_delta payload and wire bytes, and the frontier."""

from __future__ import annotations

import pytest
from s2c.agent.v1 import agent_service_pb2 as pb

from bench.chain import (
    CALL_ID,
    GENERATION_ID,
    GRPC_TRANSPORT,
    delta_lags,
    payload_bytes,
    wire_bytes,
)
from bench.preview import frontier, timed
from services.agent.eventlog import DEFAULT_CODE_TICK_S
from services.gateway.preview_policy import PreviewPolicyConfig


def code_event(offset: int, text: str) -> pb.GenerationEvent:
    # As the agent sends it: no generation_id, no event_id (agent_service.proto).
    return pb.GenerationEvent(
        sequence=7, variant_index=1, code_delta=pb.CodeDelta(offset=offset, text=text)
    )


def test_payload_counts_utf8_bytes_of_append_only_deltas() -> None:
    events = [code_event(0, "<p>café"), code_event(7, "</p>")]
    assert payload_bytes(events, "<p>café</p>") == len("<p>café</p>".encode())
    with pytest.raises(AssertionError, match="at 3, code ended at 7"):
        payload_bytes([code_event(0, "<p>café"), code_event(3, "</p>")], "<p>café</p>")
    with pytest.raises(AssertionError, match="do not add up"):
        payload_bytes(events, "<p>café</p>!")


def test_wire_bytes_are_protobuf_plus_framing_and_the_ids_cost_what_they_hold() -> None:
    event = code_event(0, "x" * 8)
    assert wire_bytes([event, event]) == 2 * (event.ByteSize() + GRPC_TRANSPORT)
    ids = len(GENERATION_ID) + 2 + len(CALL_ID) + 2  # each: tag, length, text
    assert wire_bytes([event], with_ids=True) == wire_bytes([event]) + ids


def test_a_paced_stream_is_seen_by_grpc_clients_at_once_without_ids() -> None:
    # 50 deltas/s, 20 ms apart: the 10 ms code tick sends each delta as it decodes.
    _, _, chain = timed(4, 400.0, PreviewPolicyConfig(), None)
    assert all(not (e.generation_id or e.event_id) for e in chain.code_deltas)
    lags = delta_lags(chain.code_seen, chain.arrivals)
    assert max(lags) <= DEFAULT_CODE_TICK_S + 1e-9
    wire = wire_bytes(chain.code_deltas)
    assert wire < wire_bytes(chain.code_deltas, with_ids=True) / 2


def test_the_frontier_trades_freshness_for_bytes_as_the_tick_grows() -> None:
    rows = frontier(4, 400.0, PreviewPolicyConfig())
    grpc_p99 = [float(row[5]) for row in rows]
    wire = [float(row[9].rstrip("x")) for row in rows]
    assert grpc_p99 == sorted(grpc_p99)
    assert wire == sorted(wire, reverse=True)
    assert {row[8] for row in rows} == {"1.00x"}  # nothing resent at any tick
    assert rows[0][0] == f"{DEFAULT_CODE_TICK_S * 1e3:.0f} (default)"
