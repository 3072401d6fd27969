"""The fuzz campaigns' machinery (`test_fuzz.py`): running hypothesis against services
owned by the event loop, failure bookkeeping, and the health checks after a campaign
(alive, SERVING, no error logs, RSS near its baseline). The inputs are in
`fuzz_inputs.py`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import socket
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.processes import Processes, Service
from tests.suite import create_params, run_ws

T = TypeVar("T")

BATCH = 5
# Not a timed assertion: a bound on how long one exchange may take before it is
# recorded as a hang, so a stuck server fails the test with a report instead of
# stalling it until pytest-timeout.
EXCHANGE_TIMEOUT_S = 30.0
# RSS may grow this much over a campaign. Freed memory is not all handed back to the
# OS (CPython's arenas and glibc's malloc keep pages a multi-MB frame touched; gRPC
# keeps per-channel buffers), and a warm-up cannot reach every high-water mark, so
# "back to baseline" cannot mean byte-exact. A leak per request is what this
# catches: 2,000 requests leaking even 15 KB each is 30 MB.
RSS_SLACK_BYTES = 30 * 1024 * 1024
# Finished generations are kept in memory by design (the agent retains the last 256,
# with their requests and event logs, for WatchGeneration): each input that started
# one may cost the agent twice what it carried plus this much per variant (a demo
# variant's log measures about 60 KB), on top of the slack above.
RETAINED_VARIANT_BYTES = 100 * 1024


def retained_bytes(payload: bytes, variants: int) -> int:
    """What the agent may keep of a generation it started (see RETAINED_VARIANT_BYTES)."""
    return 2 * len(payload) + variants * RETAINED_VARIANT_BYTES if variants else 0


# ---------------------------------------------------------------------------------------
# Failure bookkeeping


@dataclass
class Failure:
    count: int
    example: str


@dataclass
class Findings:
    """Problems by kind, each with the smallest input that showed it; outcomes counted."""

    failures: dict[str, Failure] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)

    def add(self, kind: str, example: str) -> None:
        found = self.failures.get(kind)
        if found is None:
            self.failures[kind] = Failure(1, example)
            return
        found.count += 1
        if len(example) < len(found.example):
            found.example = example

    def report(self) -> list[str]:
        return [
            f"{f.count}x {kind}\n    smallest input: {f.example}"
            for kind, f in sorted(self.failures.items(), key=lambda kv: -kv[1].count)
        ]


def shape(text: str, limit: int = 120) -> str:
    """`text` with the parts that vary per input (numbers, odd characters) blurred,
    so that failures of one kind are counted together."""
    text = re.sub(r"\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|[\ud800-\udfff]", "?", text)
    text = re.sub(r"(.)\1{3,}", r"\1…", text)
    text = re.sub(r"\d+", "N", text)
    return text if len(text) <= limit else text[:limit] + "…"


def clip(text: str | bytes, limit: int = 240) -> str:
    shown = repr(text[:limit])
    return shown if len(text) <= limit else f"{shown}… ({len(text)} in all)"


# ---------------------------------------------------------------------------------------
# Running hypothesis against services owned by the event loop


async def run_campaign(
    strategy: st.SearchStrategy[T],
    cases: int,
    seed_value: int,
    check: Callable[[T], Coroutine[Any, Any, None]],
) -> int:
    """Runs `check` on `cases` inputs drawn from `strategy`; returns how many ran.

    Each hypothesis example is a batch of BATCH inputs, checked concurrently: the
    engine's cost per example grows with the number of examples, so fewer, bigger
    examples draw the same inputs several times faster. Two batches may be in flight,
    so drawing the next one (CPU in this process) overlaps with the services
    answering the last one (other processes).
    """
    loop = asyncio.get_running_loop()
    slots = threading.BoundedSemaphore(2)
    started: list[concurrent.futures.Future[list[None]]] = []

    async def check_batch(batch: list[T]) -> list[None]:
        return await asyncio.gather(*(check(case) for case in batch))

    @seed(seed_value)
    @settings(
        max_examples=-(-cases // BATCH),
        deadline=None,
        database=None,
        derandomize=False,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(st.lists(strategy, min_size=BATCH, max_size=BATCH))
    def campaign(batch: list[T]) -> None:
        slots.acquire()
        future = asyncio.run_coroutine_threadsafe(check_batch(batch), loop)
        future.add_done_callback(lambda _: slots.release())
        started.append(future)

    await asyncio.to_thread(campaign)
    for future in started:
        await asyncio.wrap_future(future)  # a check that raised fails the test here
    return len(started) * BATCH


async def draw_and_warm_up(
    strategy: st.SearchStrategy[T],
    cases: int,
    warm_up: int,
    seed_value: int,
    check: Callable[[T], Coroutine[Any, Any, None]],
) -> list[T]:
    """Draws `cases` inputs, checking the first `warm_up` of them as they come, and
    returns them all for `replay`.

    The warm-up inputs are the campaign's own first ones rather than a draw of their
    own: drawing is most of a campaign's cost (hypothesis, in this process) while
    sending is cheap, and the very inputs that follow warm the services up as well as
    others would.
    """
    drawn: list[T] = []

    async def warm(case: T) -> None:
        drawn.append(case)
        if len(drawn) <= warm_up:
            await check(case)

    await run_campaign(strategy, cases, seed_value, warm)
    return drawn


async def replay(cases: list[T], check: Callable[[T], Coroutine[Any, Any, None]]) -> int:
    """Runs `check` on each of `cases`, 2 * BATCH at a time (as `run_campaign` does);
    returns how many ran."""
    slots = asyncio.Semaphore(2 * BATCH)

    async def bounded(case: T) -> None:
        async with slots:
            await check(case)

    await asyncio.gather(*(bounded(case) for case in cases))
    return len(cases)


# ---------------------------------------------------------------------------------------
# Process health


def rss_bytes(pid: int) -> int | None:
    """VmRSS of `pid`, or None when it is gone (health_problems says so)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None  # a zombie: exited, not yet reaped


def memory(suite: Processes) -> dict[str, int]:
    sizes = {s.name: rss_bytes(s.process.pid) for s in services(suite)}
    return {name: size for name, size in sizes.items() if size is not None}


def services(suite: Processes) -> tuple[Service, Service, Service]:
    return (suite.tools, suite.agent, suite.gateway)


def listening_ports(pid: int) -> set[int]:
    """TCP ports `pid` listens on (from /proc: its socket inodes, then the TCP tables)."""
    inodes: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


async def health_problems(suite: Processes) -> list[str]:
    problems = [
        f"{s.name} died (exit {s.process.returncode}); last log lines:\n{''.join(s.log[-5:])}"
        for s in services(suite)
        if s.process.returncode is not None
    ]
    for service in (suite.agent, suite.tools):
        if service.process.returncode is not None:
            continue
        async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
            response = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=EXCHANGE_TIMEOUT_S
            )
        if response.status != health_pb2.HealthCheckResponse.SERVING:
            problems.append(f"{service.name} health is {response.status}, not SERVING")
    if suite.gateway.process.returncode is None:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{suite.gateway.port}/healthz") as response:
                if response.status != 200:
                    problems.append(f"gateway /healthz answered {response.status}")
        # Serving, and still doing the job: one ordinary generation through all three.
        result = await run_ws(suite.ws_url, create_params())
        if result.close_code != 1000 or not result.of("variantComplete"):
            problems.append(
                f"an ordinary generation after the campaign failed: close {result.close_code}, "
                f"frames {[f['type'] for f in result.frames][-4:]}"
            )
    return problems


def error_log_problems(suite: Processes) -> list[str]:
    """An exception escaping a handler is logged at error level: a crash of that request."""
    seen: Counter[str] = Counter()
    for service in services(suite):
        for line in service.log:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("level") in ("error", "critical"):
                exc = str(record.get("exc", "")).strip().splitlines()
                last = shape(exc[-1] if exc else "")
                seen[f"{service.name} logged {shape(str(record.get('msg')))!r}: {last!r}"] += 1
    return [f"{n}x {what}" for what, n in seen.items()]


def memory_problems(
    before: dict[str, int], after: dict[str, int], allowance: dict[str, int]
) -> list[str]:
    problems = []
    for name, start in before.items():
        if name not in after:
            continue  # died: reported by health_problems
        limit = RSS_SLACK_BYTES + allowance.get(name, 0)
        grown = after[name] - start
        if grown > limit:
            problems.append(
                f"{name} RSS grew {grown / 2**20:.1f} MiB over the campaign "
                f"({start / 2**20:.1f} → {after[name] / 2**20:.1f} MiB; "
                f"allowed {limit / 2**20:.1f} MiB)"
            )
    return problems


@asynccontextmanager
async def closed_port() -> AsyncIterator[int]:
    """A loopback port bound (so nobody else takes it) but not listening: connects fail fast."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        yield port


def closed_port_env(port: int) -> dict[str, str]:
    closed = f"http://127.0.0.1:{port}"
    return {
        # The demo model only, whatever keys a fuzzed request carries; and should any
        # provider still be reached, it is a loopback port where nothing listens.
        "S2C_MODELS": "demo",
        "OPENAI_BASE_URL": closed,
        "ANTHROPIC_BASE_URL": closed,
        "GEMINI_BASE_URL": closed,
        "REPLICATE_BASE_URL": closed,
        "S2C_LOCAL_BASE_URL": closed,
        # Chromium renders pages in its own processes, seconds per screenshot; the
        # fuzzing is about how requests are handled, not about rendering.
        "S2C_SCREENSHOTS": "0",
    }
