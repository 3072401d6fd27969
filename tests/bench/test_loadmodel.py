"""bench/loadmodel.py: the load model's stamps and re-cut script."""

from __future__ import annotations

from bench.loadmodel import read_stamps, rechunk, stamp
from services.agent.providers.base import ExecutedTool
from services.agent.providers.scripted import CallTool, Say, ScriptedTurn, Think


def test_stamps_round_trip_through_frame_text() -> None:
    text = stamp(12.5) + "Hel" + stamp(12.52) + "lo"
    assert read_stamps(text) == [12_500_000, 12_520_000]
    assert read_stamps("no stamps") == []


def test_rechunk_recuts_every_step_and_keeps_its_text() -> None:
    steps = (Think(("thinking ",)), Say(("said it",)), CallTool("c1", "t", ('{"a":1}',)))
    turn = ScriptedTurn(steps)

    def script(turn_index: int, results: object) -> ScriptedTurn | None:
        return turn if turn_index == 0 else None

    recut = rechunk(script, 3)
    no_results: list[list[ExecutedTool]] = []
    out = recut(0, no_results)
    assert out is not None
    think, say, call = out.steps
    assert isinstance(think, Think)
    assert think.chunks == ("thi", "nki", "ng ")
    assert isinstance(say, Say)
    assert "".join(say.chunks) == "said it"
    assert all(len(c) <= 3 for c in say.chunks)
    assert isinstance(call, CallTool)
    assert "".join(call.argument_chunks) == '{"a":1}'
    assert recut(1, no_results) is None
