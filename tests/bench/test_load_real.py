"""bench/load_real.py: a tiny run on the current tree, and the client's stamp reading."""

from __future__ import annotations

import json
import math

import pytest

from bench.load_client import Generation
from bench.load_real import ROOT, Options, Tree, measure
from bench.load_real_report import TARGET_P99_MS, Row, capacity_limit_ms, knee, knee_line
from bench.sse_fake import Page, Reply


def set_code(page: Page, stamps: list[int], variant: int = 0) -> str:
    value = page.head + "".join(f"{s:08x}" for s in stamps)
    return json.dumps(
        {"type": "setCode", "variantIndex": variant, "value": value}, separators=(",", ":")
    )


def test_the_client_reads_each_new_stamp_once_from_the_frame_text() -> None:
    page = Page(stamps=4)
    generation = Generation(page)
    out: list[int] = []
    epoch_us = 1_000_000
    assert generation.set_code(set_code(page, [10, 20]), epoch_us + 100, epoch_us, out)
    assert generation.set_code(set_code(page, [10, 20, 30]), epoch_us + 130, epoch_us, out)
    assert out == [90, 80, 100]  # the first two at 100 µs, the third at 130
    assert not generation.set_code('{"type":"setCode","value":"x"}', 0, 0, out)


def test_the_fake_renders_whole_argument_deltas_that_join_to_the_page() -> None:
    page = Page(stamps=3)
    reply = Reply.render(page)
    assert len(reply.deltas) == 3
    arguments = json.loads(page.arguments("0" * 24))
    assert arguments["content"] == page.head + "0" * 24 + page.tail
    assert page.visible(len(page.head) + 17) == 2
    assert reply.closing.endswith(b"0\r\n\r\n")


@pytest.mark.e2e  # real processes: fakes, tools, an agent, the gateway, a client
async def test_a_tiny_run_fills_every_field_of_its_row() -> None:
    options = Options(stamps=100, ramp_s=2.0, window_s=2.0, fakes=1, clients=1)
    row = await measure(Tree("ours", ROOT, 1), 2, options)
    assert isinstance(row, Row)
    assert (row.tree, row.generations) == ("ours", 2)
    assert row.silent == 0
    assert row.failed == 0
    assert row.bad_frames == 0
    assert row.samples > 0
    assert row.p50_ms <= row.p99_ms
    assert row.frames_per_s > 0
    assert row.mb_per_s > 0
    assert {"gateway", "agent0", "tools", "fakes", "client", "other"} <= set(row.cpu)
    assert not math.isnan(row.late_pct)


def row(tree: str, generations: int, p99_ms: float, silent: int = 0) -> Row:
    return Row(
        tree, generations, 1, 0, 0, silent, 0, 10, p99_ms / 2, p99_ms, 1.0, 1.0,
        {"gateway": 1.0, "agent0": 1.0, "tools": 0.0, "fakes": 1.0, "client": 1.0, "other": 0.0},
        0.0, 100.0, 100.0, 0.0, 0, [],
    )  # fmt: skip


def test_knees_are_bounds_at_the_ends_of_the_sizes_measured() -> None:
    ours = [row("ours", 10, 90), row("ours", 25, 120), row("ours", 50, 400)]
    base = [row("base", 10, 300), row("base", 25, 700)]
    assert knee(ours) == 50
    assert knee(base) == 10  # its preview pacing alone is over 150 ms
    assert "ratio ≥ 5.00x" in knee_line("k", ours, base, [TARGET_P99_MS, TARGET_P99_MS])
    assert capacity_limit_ms(base) == 600
    assert "baseline N = 25; ratio 2.00x" in knee_line("k", ours, base, [150.0, 600.0])
    assert knee([row("ours", 10, 90, silent=1)]) == 10  # a silent ending is past the knee
