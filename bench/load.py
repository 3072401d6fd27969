"""Load bench: N concurrent generations, browser WebSocket → gateway → agent → tools.

Run alone from the repository root:

    .venv/bin/python bench/load.py            # N = 25, 50, 100, 200: about 4½ minutes
    .venv/bin/python bench/load.py --quick    # N = 25, 100, 10 s windows: about 2 minutes
    .venv/bin/python bench/load.py --sizes 50,100 --window 30 --workers 3
    .venv/bin/python bench/load.py --sizes 25 --profile /tmp/spy --cprofile /tmp/prof

What runs. For each N, a fresh suite of real processes on 127.0.0.1: `s2c tools` (one worker
unless `--workers`), the agent, and `s2c gateway`. The agent is `s2c agent` started through
`python -m bench.loadmodel`, which routes the demo model to the *load model*: the
demo's own script (think, create_file of a ~6 KB page, edit_file, summary) re-cut into
4-character deltas (≈ 1 token) due every 20 ms on a fixed clock, i.e. 200 characters/s ≈ 50
tokens/s per variant, and every thinking/assistant delta starts with `[t:<µs>]`, the
CLOCK_MONOTONIC time the model server was due to send it. `S2C_MODELS=demo` pins the demo
model, so each generation has **4 variants** (upstream's create count), not the demo's 2.
A variant streams ~1 700 deltas and lasts ~40 s. A separate load-client process (asyncio,
one WebSocket per generation, like the upstream UI) keeps N generations open: slot i starts
its first at i × ramp / N (ramp = one generation, so the variants are spread over every
phase of the script), and starts a new one whenever one closes. After the ramp it measures
for `--window` seconds, then closes every socket and exits; the suite is killed.

How to read the table (one row per N, all rates over the window):

* `deltas/s`: the load model's deltas (the offered load: 4 N variants × 50/s, less the
  pauses for tool calls); `events/s`: GenerationEvents the agent sent (from its /metrics;
  the deltas are counted by the load model; fewer events than deltas is the agent's
  coalescing). `frames/s`, `MB/s`: WebSocket frames and bytes the browsers received.
* `p50`/`p99`/`max ms`: added latency of each stamped thinking/assistant delta, from the
  time the model server was due to send it to the time the browser process read the frame
  carrying it. It includes the agent's deliberate coalescing of text deltas (its 40 ms tick) and
  everything the event loops add under load; code (setCode) frames are not stamped. `lag
  ms` is the load client's own worst event-loop lag (a busy client inflates latency).
* `CPU %` per process (gateway, agent, tools summed over workers, client), as a share of
  one core, from /proc/<pid>/stat; the machine has 2 cores in all. `other` is what the
  rest of the machine used meanwhile (/proc/stat busy time less ours): when it is high,
  something else competed for the cores and the latencies are pessimistic. Each process
  runs in its own session, so its own scheduler autogroup; on a shared machine `--nice
  -10` (root) sets those autogroups' niceness so that our processes get the cores first.
* `RSS MB` of gateway and agent at the end of the window, and `KB/var`: their growth over
  the idle suite divided by the live variants (4 × the open generations). The agent keeps
  finished generations' event logs (bounded by S2C_RETAIN_*), which counts here too.

Below the table: the knee (where p99 crosses 100 ms, interpolated between sizes), the
process that saturates first there (≥ 90 % of a core; "machine" when the processes use both
cores), and each target of the issue as met / NOT MET. Nothing is asserted. Then the CPU
cost per unit of work (agent µs per model delta, gateway µs per event) and the N at which
each would fill one core if it scaled linearly: these hold up on a busy machine, where the
latencies do not (see `other`).

Profiling (a separate run: both perturb the processes). `--profile DIR`: py-spy (install it
with `.venv/bin/pip install py-spy`) samples gateway, agent and client at 100 Hz with native
frames during the window; the report lists, per process, the functions with the most own
samples (syscalls, protobuf, JSON included) and our functions with the most samples
including callees, as shares of the busy samples. `--cprofile DIR`: the gateway and the
agent run under cProfile (switched on for the window only): own time, calls per second and
µs per call of the top functions of each event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import ctypes
import json
import math
import os
import pstats
import runpy
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp

SCRIPT: Final = Path(__file__).resolve()
ROOT: Final = SCRIPT.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find bench/

from bench.loadmodel import read_stamps  # noqa: E402

CLK_TCK: Final = os.sysconf("SC_CLK_TCK")
PR_SET_PDEATHSIG: Final = 1
PAGE_SIZE: Final = os.sysconf("SC_PAGE_SIZE")

VARIANTS_PER_GENERATION: Final = 4
PACE_MS: Final = 20  # between deltas
CHUNK_CHARS: Final = 4  # per delta: 4 characters ≈ 1 token, so 50 tokens/s
GENERATION_S: Final = 40.0  # one load-model generation (4 variants), about: the ramp

TARGET_KNEE_GENERATIONS: Final = 100
TARGET_P99_MS: Final = 100.0
TARGET_RSS_PER_VARIANT_KB: Final = 1024.0
SATURATED_CPU: Final = 90.0
MODEL_KEYS: Final = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "REPLICATE_API_TOKEN",
    "REPLICATE_API_KEY",
    "S2C_LOCAL_MODELS",
)

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


# -- /proc ---------------------------------------------------------------------------------


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


# -- the suite -----------------------------------------------------------------------------


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


@dataclass
class Suite:
    tools: list[Proc]
    agent: Proc
    gateway: Proc
    stats_file: Path
    agent_metrics_url: str

    @property
    def servers(self) -> list[Proc]:
        return [*self.tools, self.agent, self.gateway]

    async def agent_counts(self) -> tuple[float, int, int]:
        """(monotonic time, GenerationEvents the agent sent, model deltas): the events from
        the agent's /metrics now, the deltas as the load model last wrote them."""
        async with aiohttp.ClientSession() as session:
            async with session.get(self.agent_metrics_url) as response:
                text = await response.text()
        events = next(
            int(float(line.split()[1]))
            for line in text.splitlines()
            if line.startswith("s2c_agent_events_sent_total ")
        )
        with contextlib.suppress(FileNotFoundError, ValueError):
            stamp, deltas = self.stats_file.read_text().split()
            return float(stamp), events, int(deltas)
        return time.monotonic(), events, 0

    async def kill(self) -> None:
        await kill_all(self.servers)


@dataclass(frozen=True)
class Options:
    ramp_s: float
    window_s: float
    workers: int
    nice: int = 0  # niceness of the services and the client
    spy_dir: Path | None = None  # py-spy (native, sampling) of gateway, agent, client
    cprofile_dir: Path | None = None  # cProfile of the gateway's and agent's event loops


def launch(module: str, args: Sequence[str], profile_to: Path | None) -> list[str]:
    """The argv after `python` that runs `module` (under cProfile when `profile_to`)."""
    if profile_to is None:
        return ["-m", module, *args]
    return [str(SCRIPT), "--serve-profiled", str(profile_to), module, *args]


async def start_suite(data_dir: Path, generations: int, options: Options) -> Suite:
    env = {k: v for k, v in os.environ.items() if k not in MODEL_KEYS}
    stats_file = data_dir / "agent-events"
    env.update(
        {
            "S2C_DATA_DIR": str(data_dir),
            "NO_PROXY": "127.0.0.1",
            "S2C_SCREENSHOTS": "0",
            "S2C_MODELS": "demo",
            "S2C_DEMO_PACE_MS": str(PACE_MS),
            "S2C_LOAD_CHUNK_CHARS": str(CHUNK_CHARS),
            "S2C_LOAD_STATS": str(stats_file),
            # One client address opens every socket: lift the gateway's per-client limits.
            "S2C_MAX_CONCURRENT_PER_CLIENT": "0",
            "S2C_STARTS_PER_MINUTE": "0",
        }
    )
    workers = options.workers
    tool_ports = [free_port() for _ in range(workers)]
    agent_port, agent_metrics_port = free_port(), free_port()
    tools_addr = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in tool_ports)
    no_metrics = ["--metrics-listen", ""]
    out = options.cprofile_dir
    starting = [
        *(
            start(
                "tools",
                launch("services.cli", ["tools", "--listen", f"127.0.0.1:{p}", *no_metrics], None),
                env,
                options.nice,
            )
            for p in tool_ports
        ),
        start(
            "agent",
            launch(
                "bench.loadmodel",
                [
                    "--listen",
                    f"127.0.0.1:{agent_port}",
                    "--metrics-listen",
                    f"127.0.0.1:{agent_metrics_port}",
                ],
                out / f"agent-{generations}.pstats" if out else None,
            ),
            {**env, "S2C_TOOLS_ADDR": tools_addr},
            options.nice,
        ),
        start(
            "gateway",
            launch(
                "services.cli",
                ["gateway", "--port", "0"],
                out / f"gateway-{generations}.pstats" if out else None,
            ),
            {**env, "S2C_AGENT_ADDR": f"127.0.0.1:{agent_port}"},
            options.nice,
        ),
    ]
    results = await asyncio.gather(*starting, return_exceptions=True)
    procs = [r for r in results if isinstance(r, Proc)]
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        for proc in procs:
            proc.process.kill()
            await proc.process.wait()
        raise failed[0]
    metrics_url = f"http://127.0.0.1:{agent_metrics_port}/metrics"
    return Suite(procs[:workers], procs[workers], procs[workers + 1], stats_file, metrics_url)


# -- the load client (its own process) -----------------------------------------------------


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


# -- one size ------------------------------------------------------------------------------


@dataclass
class Row:
    generations: int
    variants: int
    deltas_per_s: float
    events_per_s: float
    frames_per_s: float
    mb_per_s: float
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu: dict[str, float]  # % of one core: gateway, agent, tools, client, other
    rss_mb: dict[str, float]
    rss_per_variant_kb: float
    live_variants: int
    completed: int
    errors: int
    client_lag_ms: float
    error_samples: list[str]


def percentile(sorted_values: Sequence[int], q: float) -> float:
    if not sorted_values:
        return math.nan
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return float(sorted_values[index])


def process_groups(suite: Suite, client_pid: int) -> dict[str, list[int]]:
    return {
        "gateway": [suite.gateway.pid],
        "agent": [suite.agent.pid],
        "tools": [p.pid for p in suite.tools],
        "client": [client_pid],
    }


def group_cpu(groups: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds so far of each group, and of the whole machine as "machine"."""
    cpu = {name: sum(cpu_seconds(pid) for pid in pids) for name, pids in groups.items()}
    cpu["machine"] = machine_busy_seconds()
    return cpu


async def measure(generations: int, options: Options) -> Row:
    with tempfile.TemporaryDirectory(prefix="s2c-load-") as tmp:
        suite = await start_suite(Path(tmp), generations, options)
        try:
            return await _measure(suite, generations, options)
        finally:
            await suite.kill()


async def warm_up(url: str, seconds: float) -> None:
    """One generation for `seconds` (then cancelled), so lazy imports and first-use buffers
    are in the idle baseline rather than counted per variant."""
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await ws.send_str(json.dumps(PARAMS))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                async for _ in ws:
                    pass


async def wait_for_files(paths: Sequence[Path], timeout_s: float = 20.0) -> None:
    """Polls (these are other processes' files) until all exist, at most `timeout_s`."""
    for _ in range(int(timeout_s * 10)):
        if all(p.exists() for p in paths):
            return
        await asyncio.sleep(0.1)


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


async def _measure(suite: Suite, generations: int, options: Options) -> Row:
    ramp_s, window_s = options.ramp_s, options.window_s
    url = f"ws://127.0.0.1:{suite.gateway.port}/generate-code"
    await warm_up(url, 2.5)
    await asyncio.sleep(1.0)  # the cancelled warm-up winds down
    idle_rss = {p.name: rss_bytes(p.pid) for p in (suite.gateway, suite.agent)}
    start_at = time.monotonic() + 1.5  # the client's imports
    window_start = start_at + ramp_s
    window_end = window_start + window_s
    config = ClientConfig(url, generations, start_at, ramp_s, window_start, window_end)
    client = await spawn(
        [str(SCRIPT), "--client", json.dumps(asdict(config))],
        options.nice,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    output = asyncio.create_task(client.communicate())
    groups = process_groups(suite, client.pid)
    await asyncio.sleep(max(0.0, window_start - time.monotonic()))
    cpu_before, wall_before = group_cpu(groups), time.monotonic()
    counts_before = await suite.agent_counts()
    spies: list[asyncio.subprocess.Process] = []
    if options.spy_dir is not None:
        for name in ("gateway", "agent", "client"):
            out = options.spy_dir / f"{name}-{generations}.txt"
            spies.append(await py_spy(groups[name][0], profile_seconds(window_s), out))
    profiled = [suite.gateway, suite.agent] if options.cprofile_dir is not None else []
    for proc in profiled:
        proc.process.send_signal(signal.SIGUSR1)  # start profiling
    await asyncio.sleep(max(0.0, window_end - 0.05 - time.monotonic()))
    cpu_after, wall_after = group_cpu(groups), time.monotonic()
    counts_after = await suite.agent_counts()
    for proc in profiled:
        proc.process.send_signal(signal.SIGUSR2)  # stop and write the stats
    rss = {p.name: rss_bytes(p.pid) for p in (suite.gateway, suite.agent)}
    rss["tools"] = sum(rss_bytes(p.pid) for p in suite.tools)
    try:
        stdout, _ = await asyncio.wait_for(output, 30)
    except TimeoutError:
        client.kill()
        raise RuntimeError("the load client did not finish in time") from None
    for spy in spies:
        await asyncio.wait_for(spy.wait(), 30)
    if options.cprofile_dir is not None:
        await wait_for_files(
            [options.cprofile_dir / f"{n}-{generations}.pstats" for n in ("gateway", "agent")]
        )
    dead = [p.name for p in suite.servers if p.process.returncode is not None]
    if dead or client.returncode != 0:
        tail = "".join(suite.agent.log[-10:] + suite.gateway.log[-10:])
        raise RuntimeError(f"exited early: {dead or ['client']}\n{tail}")
    result = ClientResult(**json.loads(stdout.decode().strip().splitlines()[-1]))

    wall = wall_after - wall_before
    cpu = {name: 100 * (cpu_after[name] - cpu_before[name]) / wall for name in cpu_before}
    # Whatever else ran on the machine meanwhile (other processes compete for the 2 cores).
    cpu["other"] = max(0.0, cpu.pop("machine") - sum(cpu.values()))
    latencies = sorted(result.latencies_us)
    live_variants = max(1, result.live_generations * VARIANTS_PER_GENERATION)
    growth = sum(rss[name] - idle_rss[name] for name in idle_rss)
    counts_wall = counts_after[0] - counts_before[0] or math.inf
    return Row(
        generations=generations,
        variants=generations * VARIANTS_PER_GENERATION,
        deltas_per_s=(counts_after[2] - counts_before[2]) / counts_wall,
        events_per_s=(counts_after[1] - counts_before[1]) / counts_wall,
        frames_per_s=result.frames / window_s,
        mb_per_s=result.frame_bytes / window_s / 1e6,
        samples=len(latencies),
        p50_ms=percentile(latencies, 0.50) / 1000,
        p99_ms=percentile(latencies, 0.99) / 1000,
        max_ms=(latencies[-1] / 1000) if latencies else math.nan,
        cpu=cpu,
        rss_mb={name: value / 1e6 for name, value in rss.items()},
        rss_per_variant_kb=growth / live_variants / 1024,
        live_variants=result.live_generations * VARIANTS_PER_GENERATION,
        completed=result.generations_completed,
        errors=result.errors,
        client_lag_ms=result.max_loop_lag_ms,
        error_samples=result.error_samples,
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


# -- the report ----------------------------------------------------------------------------

HEADER: Final = (
    f"{'N gen':>5} {'vars':>5} {'deltas/s':>9} {'events/s':>9} {'frames/s':>9} {'MB/s':>6} "
    f"{'samples':>8} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
    f"{'CPU% gw':>8} {'agent':>6} {'tools':>6} {'client':>6} {'other':>6} "
    f"{'RSS MB gw':>9} {'agent':>6} {'KB/var':>7} {'done':>5} {'err':>4} {'lag ms':>7}"
)


def format_row(row: Row) -> str:
    return (
        f"{row.generations:>5} {row.variants:>5} {row.deltas_per_s:>9.0f} "
        f"{row.events_per_s:>9.0f} "
        f"{row.frames_per_s:>9.0f} {row.mb_per_s:>6.2f} {row.samples:>8} "
        f"{row.p50_ms:>7.1f} {row.p99_ms:>7.1f} {row.max_ms:>7.0f} "
        f"{row.cpu['gateway']:>8.0f} {row.cpu['agent']:>6.0f} {row.cpu['tools']:>6.0f} "
        f"{row.cpu['client']:>6.0f} {row.cpu['other']:>6.0f} "
        f"{row.rss_mb['gateway']:>9.1f} {row.rss_mb['agent']:>6.1f} "
        f"{row.rss_per_variant_kb:>7.0f} {row.completed:>5} {row.errors:>4} "
        f"{row.client_lag_ms:>7.0f}"
    )


def knee(rows: Sequence[Row]) -> tuple[str, Row]:
    """Where p99 crosses the target (log-interpolated between sizes), and the row to blame."""
    for previous, row in zip([None, *rows], rows, strict=False):
        if not row.p99_ms > TARGET_P99_MS:
            continue
        if previous is None:
            return f"< {row.generations} generations (already over at the smallest size)", row
        low, high = math.log(previous.p99_ms), math.log(row.p99_ms)
        share = (math.log(TARGET_P99_MS) - low) / (high - low) if high > low else 0.0
        at = previous.generations * (row.generations / previous.generations) ** share
        return (
            f"≈ {at:.0f} generations ({4 * at:.0f} variants), between "
            f"{previous.generations} and {row.generations}",
            row,
        )
    return f"> {rows[-1].generations} generations (p99 never crossed 100 ms)", rows[-1]


def bottleneck(row: Row) -> str:
    servers = {k: v for k, v in row.cpu.items() if k not in ("client", "other")}
    name, busiest = max(servers.items(), key=lambda item: item[1])
    total = sum(row.cpu.values())
    parts = [f"{name} at {busiest:.0f}% of a core"]
    if busiest >= SATURATED_CPU:
        parts.append("saturated (one Python event loop)")
    else:
        parts.append("not saturated")
    if total >= 2 * SATURATED_CPU:
        parts.append(f"and the machine is full ({total:.0f}% of 200%, all processes)")
    if row.cpu["client"] >= SATURATED_CPU:
        parts.append("WARNING: the load client itself is saturated; latency is inflated")
    if row.cpu["other"] >= 20:
        parts.append(
            f"WARNING: other processes used {row.cpu['other']:.0f}% of a core meanwhile; "
            "latency and the knee are pessimistic"
        )
    return "; ".join(parts)


def report(rows: Sequence[Row]) -> None:
    print()
    print(HEADER)
    for row in rows:
        print(format_row(row))
    where, row = knee(rows)
    print()
    print(f"knee (p99 added latency > {TARGET_P99_MS:.0f} ms): {where}")
    print(f"bottleneck at N={row.generations}: {bottleneck(row)}")
    knee_ok = all(r.p99_ms <= TARGET_P99_MS for r in rows if r.generations <= 100) and any(
        r.generations >= TARGET_KNEE_GENERATIONS for r in rows
    )
    print(
        f"target knee ≥ {TARGET_KNEE_GENERATIONS} generations: "
        + ("met" if knee_ok else "NOT MET")
        + "  ("
        + ", ".join(f"N={r.generations}: p99/100 ms = {r.p99_ms / TARGET_P99_MS:.2f}" for r in rows)
        + ")"
    )
    rss_ok = all(r.rss_per_variant_kb <= TARGET_RSS_PER_VARIANT_KB for r in rows)
    print(
        "target RSS ≤ 1 MB per variant: "
        + ("met" if rss_ok else "NOT MET")
        + "  ("
        + ", ".join(f"N={r.generations}: {r.rss_per_variant_kb:.0f} KB" for r in rows)
        + ")"
    )
    print("CPU cost per unit of work (robust to a busy machine) and where a core would fill up:")
    for r in rows:
        agent_us = 1e4 * r.cpu["agent"] / r.deltas_per_s if r.deltas_per_s else math.nan
        gateway_us = 1e4 * r.cpu["gateway"] / r.events_per_s if r.events_per_s else math.nan
        print(
            f"  N={r.generations}: agent {agent_us:.0f} µs per model delta, gateway "
            f"{gateway_us:.0f} µs per event in ({r.events_per_s / max(r.frames_per_s, 1):.1f} "
            f"events per frame out); one core full at N ≈ "
            f"{r.generations * 100 / max(r.cpu['agent'], 1):.0f} (agent), "
            f"{r.generations * 100 / max(r.cpu['gateway'], 1):.0f} (gateway)"
        )
    for r in rows:
        if r.errors:
            print(f"N={r.generations}: {r.errors} error frames, e.g. {r.error_samples[:2]}")


async def run(sizes: Sequence[int], options: Options) -> None:
    print(
        f"load model: {CHUNK_CHARS}-character deltas every {PACE_MS} ms "
        f"({1000 * CHUNK_CHARS / PACE_MS / 4:.0f} tokens/s per variant), "
        f"{VARIANTS_PER_GENERATION} variants per generation; {options.workers} tool worker(s); "
        f"ramp {options.ramp_s:.0f} s, window {options.window_s:.0f} s; "
        f"{os.cpu_count()} cores" + (f"; niceness {options.nice}" if options.nice else ""),
        flush=True,
    )
    rows: list[Row] = []
    print(HEADER, flush=True)
    for size in sizes:
        row = await measure(size, options)
        rows.append(row)
        print(format_row(row), flush=True)
    report(rows)
    for size in sizes:
        for name in ("agent", "gateway", "client"):
            spied = options.spy_dir / f"{name}-{size}.txt" if options.spy_dir else None
            if spied is not None and spied.exists():
                print(f"\npy-spy {name}, N={size} ({spied}):")
                print("\n".join(profile_summary(spied)))
            profiled = (
                options.cprofile_dir / f"{name}-{size}.pstats" if options.cprofile_dir else None
            )
            if profiled is not None and profiled.exists():
                print(f"\ncProfile {name} event loop, N={size} ({profiled}):")
                print("\n".join(cprofile_summary(profiled, options.window_s)))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 25, 100; 10 s windows")
    parser.add_argument("--sizes", help="comma list of concurrent generations")
    parser.add_argument("--window", type=float, help="seconds measured per size")
    parser.add_argument("--ramp", type=float, default=GENERATION_S, help="seconds to ramp up")
    parser.add_argument("--workers", type=int, default=1, help="tool workers")
    parser.add_argument(
        "--profile", type=Path, help="py-spy gateway, agent and client into this folder"
    )
    parser.add_argument(
        "--cprofile", type=Path, help="cProfile the gateway's and agent's loops into this folder"
    )
    parser.add_argument(
        "--nice", type=int, default=0, help="niceness of the processes (e.g. -10 as root)"
    )
    parser.add_argument("--client", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--serve-profiled"]:
        serve_profiled(argv[1], argv[2], argv[3:])
        return
    args = parser.parse_args(argv)
    if args.client:
        client_main(args.client)
        return
    default_sizes = "25,100" if args.quick else "25,50,100,200"
    sizes = [int(s) for s in (args.sizes or default_sizes).split(",") if s.strip()]
    options = Options(
        ramp_s=args.ramp,
        window_s=args.window or (10.0 if args.quick else 15.0),
        workers=args.workers,
        nice=args.nice,
        spy_dir=args.profile,
        cprofile_dir=args.cprofile.resolve() if args.cprofile else None,
    )
    for folder in (options.spy_dir, options.cprofile_dir):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    asyncio.run(run(sizes, options))


if __name__ == "__main__":
    main()
