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
import json
import math
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

import aiohttp

SCRIPT: Final = Path(__file__).resolve()
ROOT: Final = SCRIPT.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find bench/

from bench.load_report import HEADER, Row, format_row, report  # noqa: E402
from bench.loadmodel_client import PARAMS, ClientConfig, ClientResult  # noqa: E402
from bench.procs import (  # noqa: E402
    Proc,
    cpu_seconds,
    free_port,
    kill_all,
    machine_busy_seconds,
    percentile,
    rss_bytes,
    spawn,
    start,
)
from bench.profiling import (  # noqa: E402
    cprofile_summary,
    profile_seconds,
    profile_summary,
    py_spy,
    serve_profiled,
)

VARIANTS_PER_GENERATION: Final = 4
PACE_MS: Final = 20  # between deltas
CHUNK_CHARS: Final = 4  # per delta: 4 characters ≈ 1 token, so 50 tokens/s
GENERATION_S: Final = 40.0  # one load-model generation (4 variants), about: the ramp

MODEL_KEYS: Final = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "REPLICATE_API_TOKEN",
    "REPLICATE_API_KEY",
    "S2C_LOCAL_MODELS",
)


# -- the suite -----------------------------------------------------------------------------


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
            # The admission bound is sized for the provider path; the load model costs a
            # fraction of that per delta, so this bench measures the engine unbounded.
            "S2C_MAX_RUNNING_VARIANTS": "0",
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


# -- one size ------------------------------------------------------------------------------


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
        [str(SCRIPT.with_name("loadmodel_client.py")), json.dumps(asdict(config))],
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
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--serve-profiled"]:
        serve_profiled(argv[1], argv[2], argv[3:])
        return
    args = parser.parse_args(argv)
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
