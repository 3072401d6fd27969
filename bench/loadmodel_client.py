"""The load client of `bench/load.py`, in its own process: `python bench/loadmodel_client.py
CONFIG_JSON` keeps N generations open against the gateway and prints one JSON line, a
`ClientResult` (frames, bytes, the stamped deltas' added latency, endings). See
`bench/load.py` for how the bench reads it."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

import aiohttp

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find bench/

from bench.loadmodel import read_stamps  # noqa: E402

PARAMS: Final = {
    "generationType": "create",
    "inputMode": "text",
    "prompt": {"text": "A landing page for a neighbourhood bakery", "images": [], "videos": []},
    "generatedCodeConfig": "html_tailwind",
    "codeGenerationModel": "claude-opus-4-8",
    "isImageGenerationEnabled": False,
    "isAssetExtractionEnabled": False,
    "isTermOfServiceAccepted": True,
}


@dataclass
class ClientConfig:
    url: str
    generations: int
    start_at: float  # monotonic
    ramp_s: float
    window_start: float
    window_end: float


@dataclass
class ClientResult:
    frames: int = 0
    frame_bytes: int = 0
    latencies_us: list[int] = field(default_factory=list)
    generations_started: int = 0
    generations_completed: int = 0
    variants_completed: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    live_generations: int = 0
    max_loop_lag_ms: float = 0.0


_TYPE_PREFIX: Final = '{"type":"'  # the gateway's frames: compact JSON, type first


def frame_type(data: str) -> str:
    """A frame's type without parsing the whole frame (a setCode carries the whole page)."""
    if data.startswith(_TYPE_PREFIX):
        return data[len(_TYPE_PREFIX) : data.index('"', len(_TYPE_PREFIX))]
    return str(json.loads(data).get("type"))


async def run_client(config: ClientConfig) -> ClientResult:
    result = ClientResult()
    params = json.dumps(PARAMS)
    live = 0
    window_start, window_end = config.window_start, config.window_end

    async def one_generation(session: aiohttp.ClientSession) -> bool:
        nonlocal live
        async with session.ws_connect(config.url, max_msg_size=0, heartbeat=None) as ws:
            await ws.send_str(params)
            result.generations_started += 1
            live += 1
            try:
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue
                    now = time.monotonic()
                    data: str = message.data
                    kind = frame_type(data)
                    if window_start <= now < window_end:
                        result.frames += 1
                        result.frame_bytes += len(data)
                        if kind in ("thinking", "assistant"):
                            now_us = int(now * 1_000_000)
                            result.latencies_us.extend(now_us - t for t in read_stamps(data))
                    if kind == "variantComplete":
                        result.variants_completed += 1
                    elif kind in ("error", "variantError"):
                        result.errors += 1
                        if len(result.error_samples) < 5:
                            result.error_samples.append(data[:300])
            finally:
                live -= 1
        if ws.close_code == 1000:
            result.generations_completed += 1
            return True
        return False

    async def slot(index: int, session: aiohttp.ClientSession) -> None:
        begin = config.start_at + index * config.ramp_s / config.generations
        await asyncio.sleep(max(0.0, begin - time.monotonic()))
        while time.monotonic() < window_end:
            try:
                if await one_generation(session):
                    continue
            except (aiohttp.ClientError, OSError) as exc:
                result.errors += 1
                if len(result.error_samples) < 5:
                    result.error_samples.append(repr(exc))
            await asyncio.sleep(1.0)  # a refused or failed generation: do not spin

    async def lag_probe() -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.05)
            lag = time.monotonic() - before - 0.05
            if window_start <= before < window_end:
                result.max_loop_lag_ms = max(result.max_loop_lag_ms, lag * 1000)

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        tasks = [asyncio.create_task(slot(i, session)) for i in range(config.generations)]
        probe = asyncio.create_task(lag_probe())
        await asyncio.sleep(max(0.0, window_end - time.monotonic()))
        result.live_generations = live
        for task in [*tasks, probe]:
            task.cancel()
        # Closing a socket cancels its generation (a non-resumable client, like upstream's UI).
        await asyncio.wait([*tasks, probe], timeout=10)
    return result


def client_main(raw: str) -> None:
    config = ClientConfig(**json.loads(raw))
    result = asyncio.run(run_client(config))
    print(json.dumps(asdict(result)), flush=True)


if __name__ == "__main__":
    client_main(sys.argv[1])
