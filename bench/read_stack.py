"""Read-stack bench: the CPU a process pays per model delta to read paced SSE streams.

Run alone from the repository root:

    .venv/bin/python bench/read_stack.py                 # 100 streams, 3 runs: ~2 min
    .venv/bin/python bench/read_stack.py --streams 200 --runs 1

At a model's pace (50 deltas/s per stream) every network read carries one delta, so
what a read costs — the HTTP client's layers, its per-read timeout, the event loop's
wake-up — is what a loaded agent pays per delta, whatever it does with the delta after
(bench/floor.py measures the opposite case: a burst, many deltas per read). One fake
Responses server (`bench/sse_fake.py`, 8-byte argument deltas every 20 ms) feeds
`--streams` concurrent streams read by a child process per configuration:

* `httpx, asyncio`: the SDK's default client (httpx2 → httpcore2 → h11 → anyio) on
  asyncio's loop: the agent before this bench;
* `httpx, uvloop`: the same client on uvloop;
* `aiohttp, asyncio` / `aiohttp, uvloop`: the SDK's own aiohttp transport
  (`openai.DefaultAioHttpClient`), which the agent now uses, on uvloop as `s2c` runs it;
* `floor, uvloop`: no HTTP client at all: `asyncio.open_connection`, the request bytes
  written by hand, the chunked body read as it comes. The least any Python reader pays.

Each child opens its streams through the SDK's raw path, as the agent does
(`with_streaming_response`, then the httpx response's `aiter_bytes`), and decodes every
record with `services.agent.providers.sse`. It counts the deltas it read and its own CPU
(`time.process_time`) over a 6 s window after a 3 s ramp; the table shows the best of
`--runs`, runs alternating between configurations. Nothing is asserted about times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find bench/ and services/

from bench.procs import free_port, kill_all, start  # noqa: E402

CONFIGS: Final = (
    ("httpx", "asyncio"),
    ("httpx", "uvloop"),
    ("aiohttp", "asyncio"),
    ("aiohttp", "uvloop"),
    ("floor", "uvloop"),
)
RAMP_S: Final = 3.0
WINDOW_S: Final = 6.0


def _client(transport: str, port: int) -> Any:
    import openai

    http_client = openai.DefaultAioHttpClient() if transport == "aiohttp" else None
    return openai.AsyncOpenAI(
        api_key="bench",
        base_url=f"http://127.0.0.1:{port}/v1",
        max_retries=0,
        timeout=60,
        http_client=http_client,
    )


async def _sdk_stream(client: Any, counted: list[int]) -> None:
    from services.agent.providers import sse

    request = client.responses.with_streaming_response.create(
        model="bench", input="page", stream=True
    )
    async with request as response:
        async for batch in sse.event_batches(response.http_response.aiter_bytes()):
            counted[0] += len(batch)


async def _raw_stream(port: int, counted: list[int]) -> None:
    """The floor: one request on a bare connection, the chunked body decoded as records."""
    from services.agent.providers import sse

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = b'{"model":"bench","input":"page","stream":true}'
    writer.write(
        b"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )

    async def chunks() -> Any:
        while data := await reader.read(65536):
            yield data

    # The chunk-size lines sit between records and hold no "data:" line: the SSE decoder
    # skips them like the comment lines they resemble, so no chunk parser is needed here.
    async for batch in sse.event_batches(chunks()):
        counted[0] += len(batch)
    writer.close()


async def _child(transport: str, port: int, streams: int) -> dict[str, float]:
    counted = [0]
    client = None if transport == "floor" else _client(transport, port)

    async def one() -> None:
        await asyncio.sleep(random.random())  # spread the phases like a real load
        if client is None:
            await _raw_stream(port, counted)
        else:
            await _sdk_stream(client, counted)

    tasks = [asyncio.create_task(one()) for _ in range(streams)]
    await asyncio.sleep(RAMP_S)
    deltas, cpu, wall = counted[0], time.process_time(), time.monotonic()
    await asyncio.sleep(WINDOW_S)
    deltas, cpu = counted[0] - deltas, time.process_time() - cpu
    wall = time.monotonic() - wall
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if client is not None:
        await client.close()
    return {"deltas_per_s": deltas / wall, "cpu_pct": 100 * cpu / wall, "us": 1e6 * cpu / deltas}


def _run_child(args: argparse.Namespace) -> None:
    main = _child(args.transport, args.port, args.streams)
    if args.loop == "uvloop":
        import uvloop

        result = uvloop.run(main)
    else:
        result = asyncio.run(main)
    print(json.dumps(result))


def _measure(transport: str, loop: str, port: int, streams: int) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", transport, loop, "--port", str(port)]
    out = subprocess.run(
        [*argv, "--streams", str(streams)], check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout.splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("TRANSPORT", "LOOP"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.transport, args.loop = args.child
        _run_child(args)
        return
    port = free_port()
    stats = Path(f"/tmp/s2c-read-stack-{port}.stats")
    try:
        best = asyncio.run(_measure_all(port, stats, args.streams, args.runs))
    finally:
        stats.unlink(missing_ok=True)
    _report(best, args.streams)


async def _measure_all(
    port: int, stats: Path, streams: int, runs: int
) -> dict[tuple[str, str], dict[str, float]]:
    """Every configuration against one fake on `port`, best of `runs`, runs alternating."""
    # Pages long enough that no stream ends inside a window.
    argv = [str(ROOT / "bench" / "sse_fake.py"), "--port", str(port), "--stamps", "1000"]
    epoch = ["--epoch-us", str(time.monotonic_ns() // 1000), "--stats", str(stats)]
    fake = await start("fake", [*argv, *epoch], dict(os.environ))
    best: dict[tuple[str, str], dict[str, float]] = {}
    try:
        for _ in range(runs):
            for config in CONFIGS:
                result = await asyncio.to_thread(_measure, *config, port, streams)
                if config not in best or result["us"] < best[config]["us"]:
                    best[config] = result
    finally:
        await kill_all([fake])
    return best


def _report(best: dict[tuple[str, str], dict[str, float]], streams: int) -> None:
    baseline = best[CONFIGS[0]]["us"]
    floor = best[CONFIGS[-1]]["us"]
    print(f"{streams} streams at 50 deltas/s, one delta per network read; best of the runs")
    print(
        f"{'client':8} {'loop':8} {'deltas/s':>9} {'CPU %':>6} {'µs/delta':>9} "
        f"{'vs httpx+asyncio':>17} {'vs floor':>9}"
    )
    for (transport, loop), r in best.items():
        print(
            f"{transport:8} {loop:8} {r['deltas_per_s']:9.0f} {r['cpu_pct']:6.1f} "
            f"{r['us']:9.1f} {r['us'] / baseline:16.2f}x {r['us'] / floor:8.2f}x"
        )


if __name__ == "__main__":
    main()
