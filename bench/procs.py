"""Process plumbing the load benches share: start `python` children in their own
sessions (dying with the bench), wait for their "listening" log line, read their CPU
time and RSS from /proc, and kill them."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import math
import os
import signal
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
CLK_TCK: Final = os.sysconf("SC_CLK_TCK")
PR_SET_PDEATHSIG: Final = 1
PAGE_SIZE: Final = os.sysconf("SC_PAGE_SIZE")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_busy_seconds() -> float:
    """CPU time all cores spent busy (not idle, not waiting for I/O) since boot."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / CLK_TCK


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE_SIZE


@dataclass
class Proc:
    name: str
    process: asyncio.subprocess.Process
    port: int
    log: list[str] = field(default_factory=list)
    drain: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the bench dies, so nothing outlives it."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


async def spawn(argv: Sequence[str], nice: int, **kwargs: Any) -> asyncio.subprocess.Process:
    """`python ARGV` in its own session, so in its own scheduler autogroup, as a separate
    deployment would be; with `nice` (negative needs root) the autogroup's niceness, so
    our processes win the cores from whatever else runs on a shared machine."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *argv,
        start_new_session=True,
        preexec_fn=_die_with_parent,
        **kwargs,
    )
    if nice:
        set_autogroup_nice(process.pid, nice)
    return process


def set_autogroup_nice(pid: int, nice: int) -> None:
    with open(f"/proc/{pid}/autogroup", "w") as f:
        f.write(str(nice))


async def start(
    name: str, argv: Sequence[str], env: dict[str, str], nice: int = 0, cwd: Path = ROOT
) -> Proc:
    """Starts `python ARGV` in `cwd` (another checkout: `python -m` imports from there)
    and waits for its "<name> listening" log line."""
    process = await spawn(
        argv,
        nice,
        env=env,
        cwd=cwd,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    log: list[str] = []
    try:
        while True:
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            if not line:
                raise RuntimeError(f"{name} exited before listening:\n" + "".join(log[-20:]))
            log.append(line)
            with contextlib.suppress(json.JSONDecodeError):
                record = json.loads(line)
                if record.get("msg") == f"{name} listening":
                    proc = Proc(name, process, int(record["port"]), log)
                    proc.drain = asyncio.create_task(_drain(process.stderr, log))
                    return proc
    except BaseException:
        if process.returncode is None:
            process.kill()
        await process.wait()
        raise


async def kill_all(procs: Sequence[Proc]) -> None:
    for proc in procs:
        if proc.process.returncode is None:
            proc.process.kill()
        await proc.process.wait()
        if proc.drain is not None:
            proc.drain.cancel()


async def _drain(stream: asyncio.StreamReader, log: list[str]) -> None:
    while line := await stream.readline():
        log.append(line.decode())
        del log[:-200]


def percentile(sorted_values: Sequence[int], q: float) -> float:
    if not sorted_values:
        return math.nan
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return float(sorted_values[index])
