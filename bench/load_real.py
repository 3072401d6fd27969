"""Load bench on the real provider path: our suite against itself at an older commit.

Run alone from the repository root (both suites, the same fakes, client and sizes, in
one run; sizes alternate between the suites so a change in machine load hits both):

    .venv/bin/python bench/load_real.py                 # N = 10 … 200: about 20 minutes
    .venv/bin/python bench/load_real.py --quick         # N = 5, 10, 25, 10 s pages: ~4 min
    .venv/bin/python bench/load_real.py --sizes 25,50 --agents 2 --fakes 2 --clients 2
    .venv/bin/python bench/load_real.py --no-baseline   # the current tree only
    .venv/bin/python bench/load_real.py --tree /tmp/s2c-head --nice -10 --every-size

What runs, per suite and N, fresh each time: `--fakes` processes of `bench/sse_fake.py`
(the OpenAI Responses API, sharing one port), `s2c tools`, the agents, `s2c gateway`,
all as `s2c up` starts them but on free ports, with `OPENAI_BASE_URL` at the fakes and
`S2C_MODELS` pinning one OpenAI model, so every variant reads SSE over HTTP through the
official SDK. Ours runs `--agents` agents (default: one per core) behind the gateway; the
baseline is the tree at `--baseline` (default a9f7bbd, checked out with `git worktree add
/tmp/s2c-a9f7bbd a9f7bbd`, run with this virtualenv's python and PYTHONPATH at the
worktree and its committed stubs), which has one agent and no admission bound: that is how
its `s2c up` ran. `--clients` load-client processes (`bench/load_client.py`) keep N
generations open.

Each generation is a create, so it has upstream's 4 variants (the WebSocket protocol has
no variant count): 4 N model streams, each one `create_file` of `--stamps` 8-byte argument
deltas at 50/s (1 500: a 12 KB page, a 30 s generation), then a one-line closing turn.

How to read the table (rates over the window, endings over ramp + window): `done`,
`refused` ("busy, retry" error frames), `failed` (other errors), `silent` (closed with
no result and no error: must be 0), `stalled` (open longer than twice a generation);
`p50`/`p99 ms`: delta to visible, from the fake writing a delta to the browser process
reading the first `setCode` that shows it; `frames/s`, `MB/s` the browsers received;
`CPU %` of one core per process (`agents` each, `fakes` and `client` summed over their
processes, `other` the rest of the machine) and `late %`, the fakes' deltas sent more
than 10 ms after due (a fake that cannot keep its pace); `KB/var`: gateway + agent RSS
growth over the idle suite per live variant. The knee is the smallest N where p99 > 150
ms or an admitted generation did not complete (failed, silent or stalled); below the
tables: both knees, their ratio against the 3x target, the silent check up to 2x our
knee, and which process saturates first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find bench/

from bench import procs  # noqa: E402
from bench.load import MODEL_KEYS, warm_up  # noqa: E402
from bench.load_client import ClientConfig, ClientResult  # noqa: E402
from bench.load_real_report import (  # noqa: E402
    PACE_MS,
    VARIANTS,
    Row,
    capacity_limit_ms,
    format_row,
    header,
    knee,
    report,
)
from bench.procs import Proc, kill_all, percentile, rss_bytes, start  # noqa: E402

BASELINE_COMMIT: Final = "a9f7bbd"
MODEL: Final = "gpt-5.5 (high effort)"  # an id both trees know


@dataclass(frozen=True)
class Tree:
    """A checkout to run the suite from: ours, or the baseline's worktree."""

    name: str
    path: Path
    agents: int

    def env(self, data_dir: Path, base_url: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in (*MODEL_KEYS, "S2C_MODELS")}
        env.update(
            {
                "S2C_DATA_DIR": str(data_dir),
                "NO_PROXY": "127.0.0.1",
                "S2C_SCREENSHOTS": "0",
                "S2C_LOG_FORMAT": "json",
                "OPENAI_API_KEY": "sk-bench",
                "OPENAI_BASE_URL": base_url,
                "S2C_MODELS": MODEL,
                # One client address opens every socket: lift the per-client limits.
                "S2C_MAX_CONCURRENT_PER_CLIENT": "0",
                "S2C_STARTS_PER_MINUTE": "0",
                "S2C_MAX_WAITING_PER_CLIENT": "0",
            }
        )
        # `python -m` from the tree with its own stubs, ours too: the virtualenv's
        # editable install finds them in the checkout it was made from, which may be newer.
        env["PYTHONPATH"] = f"{self.path}:{self.path / 'gen' / 'python'}"
        return env


@dataclass(frozen=True)
class Options:
    stamps: int
    ramp_s: float
    window_s: float
    fakes: int
    clients: int
    nice: int = 0  # niceness of every process the bench starts (negative: root)


@dataclass
class Suite:
    fakes: list[Proc]
    tools: Proc
    agents: list[Proc]
    gateway: Proc
    stats: list[Path]

    @property
    def servers(self) -> list[Proc]:
        return [*self.fakes, self.tools, *self.agents, self.gateway]

    async def kill(self) -> None:
        await kill_all(self.servers)

    def fake_counts(self) -> tuple[int, int]:
        """(deltas, late deltas) the fakes have written so far."""
        deltas = late = 0
        for path in self.stats:
            if path.exists():
                written, slow, _ = (int(v) for v in path.read_text().split())
                deltas, late = deltas + written, late + slow
        return deltas, late


async def start_suite(tree: Tree, data_dir: Path, epoch_us: int, options: Options) -> Suite:
    port = procs.free_port()
    stats = [data_dir / f"fake-{i}.stats" for i in range(options.fakes)]
    fake_args = ["--port", str(port), "--epoch-us", str(epoch_us), "--stamps"]
    fake_args += [str(options.stamps), "--pace-ms", str(PACE_MS)]
    env = tree.env(data_dir, f"http://127.0.0.1:{port}/v1")
    fake_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # the fakes are ours
    fake = str(ROOT / "bench" / "sse_fake.py")
    fakes = [
        await start("fake", [fake, *fake_args, "--stats", str(s)], fake_env, options.nice)
        for s in stats
    ]
    cli = ["-m", "services.cli"]
    no_metrics = ["--metrics-listen", ""]
    tools_port = procs.free_port()
    agent_ports = [procs.free_port() for _ in range(tree.agents)]
    starting = [
        start(
            "tools",
            [*cli, "tools", "--listen", f"127.0.0.1:{tools_port}", *no_metrics],
            env,
            options.nice,
            tree.path,
        )
    ]
    for i, agent_port in enumerate(agent_ports):
        agent_env = {**env, "S2C_TOOLS_ADDR": f"127.0.0.1:{tools_port}"}
        agent_env["S2C_DATA_DIR"] = str(data_dir / f"agent-{i}")  # SQLite: one per agent
        listen = ["--listen", f"127.0.0.1:{agent_port}", *no_metrics]
        starting.append(
            start("agent", [*cli, "agent", *listen], agent_env, options.nice, tree.path)
        )
    agents_addr = ",".join(f"127.0.0.1:{p}" for p in agent_ports)
    gateway_env = {**env, "S2C_AGENT_ADDR": agents_addr}
    starting.append(
        start("gateway", [*cli, "gateway", "--port", "0"], gateway_env, options.nice, tree.path)
    )
    results = await asyncio.gather(*starting, return_exceptions=True)
    started = [r for r in results if isinstance(r, Proc)]
    failed = [r for r in results if isinstance(r, BaseException)]
    suite = Suite(fakes, started[0], started[1:-1], started[-1], stats) if not failed else None
    if suite is None:
        await kill_all([*fakes, *started])
        raise failed[0]
    return suite


def groups(suite: Suite, clients: Sequence[int]) -> dict[str, list[int]]:
    named = {"gateway": [suite.gateway.pid], "tools": [suite.tools.pid]}
    named |= {f"agent{i}": [a.pid] for i, a in enumerate(suite.agents)}
    return named | {"fakes": [f.pid for f in suite.fakes], "client": list(clients)}


def cpu_now(named: dict[str, list[int]]) -> dict[str, float]:
    cpu = {name: sum(procs.cpu_seconds(pid) for pid in pids) for name, pids in named.items()}
    return cpu | {"machine": procs.machine_busy_seconds()}


async def measure(tree: Tree, generations: int, options: Options) -> Row:
    with tempfile.TemporaryDirectory(prefix="s2c-load-real-") as tmp:
        epoch_us = int(time.monotonic() * 1e6)
        suite = await start_suite(tree, Path(tmp), epoch_us, options)
        try:
            return await _measure(tree, suite, generations, epoch_us, options)
        finally:
            await suite.kill()


async def _measure(
    tree: Tree, suite: Suite, generations: int, epoch_us: int, options: Options
) -> Row:
    url = f"ws://127.0.0.1:{suite.gateway.port}/generate-code"
    await warm_up(url, 2.5)
    await asyncio.sleep(1.0)  # the cancelled warm-up winds down
    watched = [suite.gateway, *suite.agents]
    idle_rss = sum(rss_bytes(p.pid) for p in watched)
    start_at = time.monotonic() + 1.5  # the clients' imports
    window_start = start_at + options.ramp_s
    window_end = window_start + options.window_s
    clients = []
    for k in range(options.clients):
        config = ClientConfig(
            url=url,
            slots=list(range(k, generations, options.clients)),
            generations=generations,
            stamps=options.stamps,
            epoch_us=epoch_us,
            start_at=start_at,
            ramp_s=options.ramp_s,
            window_start=window_start,
            window_end=window_end,
            stall_s=2 * options.ramp_s + 10,
        )
        argv = [str(ROOT / "bench" / "load_client.py"), json.dumps(asdict(config))]
        clients.append(
            await procs.spawn(argv, options.nice, cwd=ROOT, stdout=asyncio.subprocess.PIPE)
        )
    outputs = [asyncio.create_task(c.communicate()) for c in clients]
    named = groups(suite, [c.pid for c in clients])
    await asyncio.sleep(max(0.0, window_start - time.monotonic()))
    cpu_before, wall_before, fake_before = cpu_now(named), time.monotonic(), suite.fake_counts()
    await asyncio.sleep(max(0.0, window_end - 0.05 - time.monotonic()))
    cpu_after, wall_after, fake_after = cpu_now(named), time.monotonic(), suite.fake_counts()
    rss = sum(rss_bytes(p.pid) for p in watched)
    results = []
    for client, output in zip(clients, outputs, strict=True):
        stdout, _ = await asyncio.wait_for(output, 60)
        if client.returncode != 0:
            raise RuntimeError(f"a load client exited with {client.returncode}")
        results.append(ClientResult(**json.loads(stdout.decode().strip().splitlines()[-1])))
    dead = [p.name for p in suite.servers if p.process.returncode is not None]
    if dead:
        raise RuntimeError(f"exited early: {dead}\n" + "".join(suite.gateway.log[-10:]))
    wall = wall_after - wall_before
    cpu = {name: 100 * (cpu_after[name] - cpu_before[name]) / wall for name in cpu_before}
    cpu["other"] = max(0.0, cpu.pop("machine") - sum(cpu.values()))
    latencies = sorted(v for r in results for v in r.latencies_us)
    deltas = fake_after[0] - fake_before[0]
    live_variants = sum(r.live_variants for r in results)
    return Row(
        tree=tree.name,
        generations=generations,
        completed=sum(r.completed for r in results),
        refused=sum(r.refused for r in results),
        failed=sum(r.failed for r in results),
        silent=sum(r.silent for r in results),
        stalled=sum(r.stalled for r in results),
        samples=len(latencies),
        p50_ms=percentile(latencies, 0.50) / 1000,
        p99_ms=percentile(latencies, 0.99) / 1000,
        frames_per_s=sum(r.frames for r in results) / options.window_s,
        mb_per_s=sum(r.frame_bytes for r in results) / options.window_s / 1e6,
        cpu=cpu,
        late_pct=100 * (fake_after[1] - fake_before[1]) / deltas if deltas else math.nan,
        deltas_per_s=deltas / wall,
        kb_per_variant=(rss - idle_rss) / max(1, live_variants) / 1024,
        client_lag_ms=max(r.max_loop_lag_ms for r in results),
        bad_frames=sum(r.bad_frames for r in results),
        notes=[n for r in results for n in r.samples][:3],
    )


def baseline_tree(commit: str) -> Tree:
    """The worktree at `commit`; one agent, as its `s2c up` ran (it cannot route between
    several)."""
    path = Path(f"/tmp/s2c-{commit}")
    if not path.exists():
        subprocess.run(["git", "worktree", "add", str(path), commit], cwd=ROOT, check=True)
    return Tree(commit, path, 1)


async def run(
    sizes: Sequence[int], trees: Sequence[Tree], options: Options, every_size: bool = False
) -> list[Row]:
    load = os.getloadavg()
    print(
        f"real path: OpenAI Responses over HTTP from {options.fakes} fake process(es); "
        f"{options.stamps} 8-byte argument deltas per variant at {1000 / PACE_MS:.0f}/s "
        f"({options.stamps * PACE_MS / 1000:.0f} s), {VARIANTS} variants per generation; "
        f"{options.clients} client process(es); niceness {options.nice}; "
        f"ramp {options.ramp_s:.0f} s, window {options.window_s:.0f} s; "
        f"{os.cpu_count()} cores; load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        + ", ".join(f"{t.name}: {t.agents} agent(s) from {t.path}" for t in trees),
        flush=True,
    )
    agents = max(t.agents for t in trees)
    print(header(agents), flush=True)
    rows: list[Row] = []
    for size in sizes:
        for tree in trees:
            mine = [r for r in rows if r.tree == tree.name]
            past = knee(mine, capacity_limit_ms(mine))
            is_ours = tree is trees[0]
            if not every_size and past is not None and (not is_ours or size > 2 * past):
                continue  # the baseline stops past its knee; ours at twice its knee
            row = await measure(tree, size, options)
            rows.append(row)
            print(format_row(row, agents), flush=True)
    report(rows, [t.name for t in trees], agents, options.fakes, options.clients)
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 5, 10, 25; 10 s pages")
    parser.add_argument("--sizes", help="comma list of concurrent generations")
    parser.add_argument("--window", type=float, help="seconds measured per size")
    parser.add_argument("--stamps", type=int, help="argument deltas per page (1 500: 30 s)")
    parser.add_argument("--agents", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--fakes", type=int, default=2, help="fake model processes")
    parser.add_argument("--clients", type=int, default=2, help="load-client processes")
    parser.add_argument("--baseline", default=BASELINE_COMMIT, help="commit to compare with")
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="our checkout (default: this one, as it is)"
    )
    parser.add_argument(
        "--nice", type=int, default=0, help="niceness of the processes (e.g. -10 as root)"
    )
    parser.add_argument(
        "--every-size", action="store_true", help="measure every size, past the knees too"
    )
    parser.add_argument("--no-baseline", action="store_true", help="the current tree only")
    args = parser.parse_args(argv)
    stamps = args.stamps or (500 if args.quick else 1500)
    default_sizes = "5,10,25" if args.quick else "10,25,50,75,100,150,200"
    sizes = [int(s) for s in (args.sizes or default_sizes).split(",") if s.strip()]
    generation_s = stamps * PACE_MS / 1000
    options = Options(
        stamps=stamps,
        ramp_s=generation_s,
        window_s=args.window or (8.0 if args.quick else 15.0),
        fakes=args.fakes,
        clients=args.clients,
        nice=args.nice,
    )
    trees = [Tree("ours", args.tree.resolve(), args.agents)]
    if not args.no_baseline:
        trees.append(baseline_tree(args.baseline))
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    asyncio.run(run(sizes, trees, options, args.every_size))


if __name__ == "__main__":
    main()
