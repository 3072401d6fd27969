"""Profiling for `bench/load.py`: py-spy samples and cProfile of the services' event
loops, and their summaries."""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import runpy
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]


def serve_profiled(out: str, module: str, args: Sequence[str]) -> None:
    """Runs `python -m MODULE ARGS`; SIGUSR1 starts a cProfile of the main thread (the
    event loop), SIGUSR2 stops it and writes the stats to `out`."""
    profiler = cProfile.Profile()

    def begin(signum: int, frame: object) -> None:
        profiler.enable()

    def end(signum: int, frame: object) -> None:
        profiler.disable()
        profiler.dump_stats(out + ".tmp")
        os.replace(out + ".tmp", out)

    signal.signal(signal.SIGUSR1, begin)
    signal.signal(signal.SIGUSR2, end)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def cprofile_summary(path: Path, seconds: float, limit: int = 25) -> list[str]:
    """The functions with the most time of their own in a cProfile of `seconds`, with
    calls per second and µs per call (cProfile roughly doubles the cost of Python calls:
    read the ranking and the call counts, not the absolute times)."""
    stats = pstats.Stats(str(path))
    rows: list[tuple[float, float, int, str]] = []
    table: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    table = stats.stats  # type: ignore[attr-defined]
    for (file, line, name), (_, calls, own, cumulative, _) in table.items():
        rows.append((own, cumulative, calls, _short(f"{name} ({file}:{line})")))
    total = sum(r[0] for r in rows) or 1.0
    lines = [f"{'% own':>6} {'own s':>7} {'cum s':>7} {'calls/s':>9} {'µs/call':>8}  function"]
    for own, cumulative, calls, name in sorted(rows, key=lambda r: -r[0])[:limit]:
        lines.append(
            f"{100 * own / total:6.1f} {own:7.2f} {cumulative:7.2f} {calls / seconds:9.0f} "
            f"{1e6 * own / max(calls, 1):8.1f}  {name}"
        )
    return lines


def profile_seconds(window_s: float) -> int:
    return max(1, round(window_s - 1))


async def py_spy(pid: int, seconds: float, out: Path) -> asyncio.subprocess.Process:
    """Samples `pid` for `seconds` at 100 Hz into collapsed stacks, native frames included
    (each sample pauses the process briefly: a profiled run's latencies are not comparable)."""
    return await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("py-spy")),
        "record",
        "--pid",
        str(pid),
        "--duration",
        str(round(seconds)),
        "--rate",
        "100",
        "--native",  # C frames too (grpc's Cython, protobuf, json): pauses per sample
        "--format",
        "raw",
        "--output",
        str(out),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


# Where a sampled thread waits rather than works: epoll and sleeps, condition variables,
# semaphores and locks (a thread waiting for the GIL or for work).
_IDLE_LEAVES: Final = frozenset(
    {"epoll_wait", "clock_nanosleep", "nanosleep", "poll", "select", "pthread_cond_wait"}
    | {"pthread_cond_timedwait", "sem_wait", "sem_timedwait", "sem_clockwait", "futex"}
    | {"PyThread_acquire_lock_timed", "take_gil"}
)


def _idle(frames: Sequence[str]) -> bool:
    named = [f for f in frames if f and not f.startswith("0x")]
    if named and named[-1].partition(" (")[0] in _IDLE_LEAVES:
        return True
    # An unnamed native leaf in a side thread: a futex wait (for the GIL, or for work).
    return frames[-1].startswith("0x") and frames[0].startswith("Thread._bootstrap")


def profile_summary(path: Path, limit: int = 14) -> list[str]:
    """What a py-spy raw file says, as shares of the busy samples (waiting left out; all
    threads): the functions with the most samples of their own (the innermost named frame:
    a C function such as a syscall, a protobuf or JSON routine counts as itself), then our
    code's functions with the most samples including what they call. Multiply by the
    process's CPU % for a share of a core."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    busy = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        raw = stack.split(";")
        if not stack or not count_text.isdigit() or _idle(raw):
            continue
        count = int(count_text)
        busy += count
        frames = [_short(f) for f in raw if f and not f.startswith("0x")]
        if not frames:
            continue
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for function in {f.rpartition(":")[0] + ")" for f in frames}:
            inclusive[function] = inclusive.get(function, 0) + count
    if not busy:
        return ["(no busy samples)"]
    lines = [f"{busy} busy samples", f"{'% busy':>7}  own time (innermost named frame)"]
    for name, n in sorted(own.items(), key=lambda item: -item[1])[:limit]:
        lines.append(f"{100 * n / busy:7.1f}  {name}")
    lines.append(f"{'% busy':>7}  our functions, including callees (entry points left out)")
    ours = [(name, n) for name, n in inclusive.items() if "(services/" in name and n < 0.9 * busy]
    for name, n in sorted(ours, key=lambda item: -item[1])[:limit]:
        lines.append(f"{100 * n / busy:7.1f}  {name}")
    return lines


def _short(frame: str) -> str:
    """`func (/long/path/pkg/file.py:123)` → `func (pkg/file.py:123)`."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", f"{ROOT}/", "lib/python3.11/"):
        if marker in where:
            where = where.split(marker, 1)[1]
            break
    return f"{name} ({where})"
