"""bench/floor.py: a tiny run of the floor bench makes one row per provider.

Each run also checks, inside the bench, that the agent's final code is the page the
fake streamed; no timing is asserted.
"""

from __future__ import annotations

import json

import pytest

from bench.floor import Options, report, run
from bench.floor_streams import PROVIDERS, arguments_for, has_tool_result, pieces


async def test_a_tiny_run_gives_a_row_per_provider(capsys: pytest.CaptureFixture[str]) -> None:
    options = Options(deltas=300, runs=1)
    rows = await run(options)
    assert [row.provider for row in rows] == [p.title for p in PROVIDERS.values()]
    assert {row.deltas for row in rows} == {300}
    report(rows, options)
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 1 + len(rows) + 1
    assert all(row.provider in line for row, line in zip(rows, table[1:], strict=False))


def test_arguments_stream_as_the_deltas_asked_for() -> None:
    html, args = arguments_for(1000)
    assert json.loads(args) == {"path": "index.html", "content": html}
    cut = pieces(args, 1000)
    assert "".join(cut) == args
    assert len(cut) <= 1000
    assert max(map(len, cut)) <= 9


def test_the_second_turn_is_the_one_carrying_a_tool_result() -> None:
    assert not has_tool_result({"input": [{"role": "user", "content": "x"}]})
    assert has_tool_result({"input": [{"type": "function_call_output", "output": "{}"}]})
    assert has_tool_result({"messages": [{"role": "tool", "content": "{}"}]})
    assert has_tool_result({"messages": [{"content": [{"type": "tool_result"}]}]})
