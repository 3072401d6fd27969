"""Paced bench (issue 42): CPU per model delta of one agent and the gateway against a
receive floor measured in the same run, and the knee of one agent process.

Run alone from the repository root:

    PYTHONPATH=.:gen/python .venv/bin/python bench/paced.py    # N = 1, 10, 25; knee 25…60
    PYTHONPATH=.:gen/python .venv/bin/python bench/paced.py --sizes 1,25 --knee ''  # no knee
    git archive integ | tar -x -C /tmp/base   # then, for a baseline in the same run:
    PYTHONPATH=.:gen/python .venv/bin/python bench/paced.py --baseline /tmp/base

Every stream is a `bench/sse_fake.py` Responses stream: one `create_file` of 8-byte
argument deltas at 50 deltas/s, as a model paces them. Per N (concurrent generations of
4 options each, so 4 N streams), fresh each time:

- **floor**: a child process (`--reader`) that keeps 4 N of the same streams open with a
  bare aiohttp client, splits every body into SSE records and `orjson.loads` each `data:`
  line. The least a Python process on uvloop pays to receive what the agent receives;
  its CPU over the window divided by the deltas the fake wrote meanwhile;
- **suite**: `bench/load_real.py`'s suite (one fake, one tool worker, ONE agent, the
  gateway) and its load client (4 N variants over WebSockets, the upstream protocol),
  the admission bound lifted so a refusal never hides the knee; with `--baseline DIR`
  the same from that checkout, right after ours at each N, against the same floor.
  The agent's and the gateway's CPU (/proc, user + system) over the window divided by
  the same count.

CPU time, not wall time, is what the per-delta columns count, so a busy machine moves
them less than it moves latencies; /proc counts in 10 ms ticks (`--window` long enough
that this is under 1 %). The knee: the largest N of `--knee` whose p99 delta → visible is
≤ 250 ms with every admitted generation completing (the search stops at the first
failure). Nothing is asserted about times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import aiohttp
import orjson

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find bench/

from bench import procs  # noqa: E402
from bench.load_real import Options, Tree, _measure, start_suite  # noqa: E402
from bench.load_real_report import PACE_MS, VARIANTS, Row  # noqa: E402

KNEE_P99_MS: Final = 250.0
BODY: Final = b'{"model":"bench","input":"page","stream":true}'


async def _read_forever(session: aiohttp.ClientSession, url: str) -> None:
    """One stream slot: a first turn read to its end, again and again."""
    await asyncio.sleep(random.random() * PACE_MS / 1000)  # spread the phases
    while True:
        async with session.post(url, data=BODY) as response:
            rest = b""
            async for data in response.content.iter_any():
                records = (rest + data).split(b"\n\n")
                rest = records.pop()
                for record in records:
                    for line in record.split(b"\n"):
                        if line.startswith(b"data:"):
                            orjson.loads(line[5:])


async def _reader(port: int, streams: int) -> None:
    url = f"http://127.0.0.1:{port}/v1/responses"
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(_read_forever(session, url) for _ in range(streams)))


async def floor(generations: int, options: Options) -> tuple[float, float]:
    """(µs of CPU per delta, deltas/s) of the floor reader on 4 N paced streams."""
    with tempfile.TemporaryDirectory(prefix="s2c-paced-") as tmp:
        port, stats = procs.free_port(), Path(tmp) / "fake.stats"
        argv = [str(ROOT / "bench" / "sse_fake.py"), "--port", str(port), "--stats", str(stats)]
        argv += ["--stamps", str(options.stamps), "--epoch-us", str(time.monotonic_ns() // 1000)]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        fake = await procs.start("fake", argv, env, options.nice)
        reader = await procs.spawn(
            [__file__, "--reader", str(port), str(VARIANTS * generations)],
            options.nice,
            cwd=ROOT,
        )
        try:
            await asyncio.sleep(options.ramp_s)
            cpu, wall, deltas = procs.cpu_seconds(reader.pid), time.monotonic(), _written(stats)
            await asyncio.sleep(options.window_s)
            cpu = procs.cpu_seconds(reader.pid) - cpu
            wall, deltas = time.monotonic() - wall, _written(stats) - deltas
        finally:
            reader.kill()
            await reader.wait()
            await procs.kill_all([fake])
    return 1e6 * cpu / max(1, deltas), deltas / wall


def _written(stats: Path) -> int:
    return int(stats.read_text().split()[0]) if stats.exists() else 0


OURS: Final = Tree("ours", ROOT, 1)


async def suite(generations: int, options: Options, tree: Tree = OURS) -> Row:
    os.environ["S2C_MAX_RUNNING_VARIANTS"] = "100000"  # the knee, not the bound, is measured
    with tempfile.TemporaryDirectory(prefix="s2c-paced-") as tmp:
        epoch_us = int(time.monotonic() * 1e6)
        running = await start_suite(tree, Path(tmp), epoch_us, options)
        try:
            return await _measure(tree, running, generations, epoch_us, options)
        finally:
            await running.kill()


def per_delta(row: Row, name: str) -> float:
    return 1e4 * row.cpu[name] / row.deltas_per_s if row.deltas_per_s else float("nan")


def ok(row: Row) -> bool:
    return row.p99_ms <= KNEE_P99_MS and not (row.refused + row.failed + row.silent + row.stalled)


async def run(
    sizes: Sequence[int], knee_sizes: Sequence[int], options: Options, baseline: Path | None
) -> None:
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(
        f"paced: {VARIANTS} options per generation, 8-byte deltas at {1000 / PACE_MS:.0f}/s "
        f"each, {options.stamps} per page; one agent; ramp {options.ramp_s:.0f} s, window "
        f"{options.window_s:.0f} s; {os.cpu_count()} cores; load average {load}",
        flush=True,
    )
    trees = [OURS] if baseline is None else [OURS, Tree("baseline", baseline, 1)]
    head = (
        f"{'suite':<8} {'N':>3} {'deltas/s':>8} {'floor µs':>8} {'agent µs':>8} {'gw µs':>6} "
        f"{'a+g µs':>6} {'agent/fl':>8} {'gw/fl':>6} {'(a+g)/fl':>8} "
        f"{'p50 ms':>6} {'p99 ms':>6} {'frames/s':>8} {'refused':>7} {'other %':>7}"
    )
    print(head, flush=True)
    for n in sizes:
        floor_us, _ = await floor(n, options)
        for tree in trees:
            row = await suite(n, options, tree)
            agent, gw = per_delta(row, "agent0"), per_delta(row, "gateway")
            print(
                f"{tree.name:<8} {n:>3} {row.deltas_per_s:>8.0f} {floor_us:>8.1f} "
                f"{agent:>8.1f} {gw:>6.1f} "
                f"{agent + gw:>6.1f} {agent / floor_us:>7.2f}x {gw / floor_us:>5.2f}x "
                f"{(agent + gw) / floor_us:>7.2f}x {row.p50_ms:>6.1f} {row.p99_ms:>6.1f} "
                f"{row.frames_per_s:>8.0f} {row.refused:>7} {row.cpu['other']:>7.0f}",
                flush=True,
            )
    for tree in trees:
        await _knee(tree, knee_sizes, options)
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


async def _knee(tree: Tree, knee_sizes: Sequence[int], options: Options) -> None:
    knee = None
    for n in knee_sizes:
        row = await suite(n, options, tree)
        print(
            f"{tree.name} knee search N={n}: p50 {row.p50_ms:.1f} p99 {row.p99_ms:.1f} ms, agent "
            f"{row.cpu['agent0']:.0f}% of a core, {per_delta(row, 'agent0'):.1f} µs/delta, "
            f"done {row.completed} refused {row.refused} failed {row.failed} silent "
            f"{row.silent} stalled {row.stalled}; other {row.cpu['other']:.0f}%",
            flush=True,
        )
        if not ok(row):
            break
        knee = n
    if knee_sizes:
        shown = f"N = {knee}" if knee is not None else f"< {knee_sizes[0]}"
        print(f"{tree.name} knee (one agent, p99 ≤ {KNEE_P99_MS:.0f} ms, all completing): {shown}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1,10,25", help="N for the per-delta table")
    parser.add_argument("--knee", default="25,40,50,60", help="N to search, ascending")
    parser.add_argument("--stamps", type=int, default=500, help="deltas per page (10 s)")
    parser.add_argument("--window", type=float, default=15.0, help="seconds measured")
    parser.add_argument("--nice", type=int, default=0, help="autogroup niceness (root)")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout (e.g. `git archive integ`) to compare"
    )
    parser.add_argument("--reader", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reader:
        import uvloop

        uvloop.run(_reader(*args.reader))
        return
    options = Options(
        stamps=args.stamps,
        ramp_s=args.stamps * PACE_MS / 1000,
        window_s=args.window,
        fakes=1,
        clients=1,
        nice=args.nice,
    )
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    knee_sizes = [int(s) for s in args.knee.split(",") if s.strip()]
    baseline = args.baseline.resolve() if args.baseline else None
    asyncio.run(run(sizes, knee_sizes, options, baseline))


if __name__ == "__main__":
    main()
