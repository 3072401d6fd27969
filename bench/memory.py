"""Memory bench: the agent's RSS over 1,000 demo generations, under two retention policies.

Run alone from the repository root:

    .venv/bin/python bench/memory.py                  # 1,000 generations per policy
    .venv/bin/python bench/memory.py --generations 300 --marks 100,200,300

What runs. For each policy, fresh real processes on 127.0.0.1: `s2c tools` (screenshots off
unless `--screenshots`: Chromium makes a run take many minutes) and `s2c agent` with the
demo model at
`S2C_DEMO_PACE_MS=0`. A gRPC client keeps `--concurrency` `GenerateCode` calls
open (text prompts, 2 demo variants each: create_file, [screenshot_preview,] edit_file)
until `--generations` have finished, and reads the agent's RSS (/proc/<pid>/status) and
its retention gauges (its /metrics) at each mark.

Policies. The baseline is what the agent did before: keep the last 256 finished
generations whatever their size or age (`S2C_RETAIN_BYTES=0 S2C_RETAIN_SECONDS=0`; the old
FIFO could not even retire past a running one). "defaults" is the bounded retention
(64 generations, 32 MB, 300 s). The last column is RSS at the last mark over RSS at the
one before it: the target is 0.90 to 1.10, flat (a drop means garbage had been held
until a late collection, as before the fix in docs/architecture.md "Retention"). Nothing
is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: find bench/

from bench.procs import Proc, free_port, kill_all, start  # noqa: E402

MODEL_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "S2C_MODELS")
CLI = ("-m", "services.cli")


@dataclass(frozen=True)
class Policy:
    name: str
    env: dict[str, str]


POLICIES = (
    Policy(
        "count only (before)",
        {"S2C_RETAIN_GENERATIONS": "256", "S2C_RETAIN_BYTES": "0", "S2C_RETAIN_SECONDS": "0"},
    ),
    Policy("defaults", {}),
)


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def gauges(port: int) -> tuple[int, float]:
    """Retained generations and MB, from the agent's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("s2c_agent_retained_"):
            name, value = line.split()
            values[name] = float(value)
    return int(values["s2c_agent_retained_generations"]), values["s2c_agent_retained_bytes"] / 1e6


async def measure(policy: Policy, args: argparse.Namespace) -> list[tuple[float, int, float]]:
    data_dir = Path(tempfile.mkdtemp(prefix="s2c-membench-"))
    env = {k: v for k, v in os.environ.items() if k not in MODEL_KEYS}
    env.update(
        {
            "S2C_DATA_DIR": str(data_dir),
            "S2C_DEMO_PACE_MS": "0",
            "S2C_LOG_FORMAT": "json",
            "NO_PROXY": "127.0.0.1",
            "S2C_SCREENSHOTS": "1" if args.screenshots else "0",
            **policy.env,
        }
    )
    processes: list[Proc] = []
    try:
        tools = await start(
            "tools", [*CLI, "tools", "--listen", "127.0.0.1:0", "--metrics-listen", ""], env
        )
        processes.append(tools)
        metrics_port = free_port()
        metrics = f"127.0.0.1:{metrics_port}"
        agent = await start(
            "agent",
            [*CLI, "agent", "--listen", "127.0.0.1:0", "--metrics-listen", metrics],
            {**env, "S2C_TOOLS_ADDR": f"127.0.0.1:{tools.port}"},
        )
        processes.append(agent)
        rows: list[tuple[float, int, float]] = []
        async with grpc.aio.insecure_channel(f"127.0.0.1:{agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            finished = 0
            marks = sorted(args.marks)

            async def one(n: int) -> None:
                request = pb.GenerateCodeRequest(
                    input_mode=pb.INPUT_MODE_TEXT,
                    prompt=pb.Prompt(text=f"A landing page for bakery number {n}"),
                )
                async for _ in stub.GenerateCode(request):
                    pass

            running: set[asyncio.Task[None]] = set()
            started = 0
            while len(rows) < len(marks):
                while len(running) < args.concurrency and started < marks[-1]:
                    started += 1
                    running.add(asyncio.create_task(one(started)))
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    running.discard(task)
                    task.result()
                    finished += 1
                    if finished == marks[len(rows)]:
                        count, megabytes = gauges(metrics_port)
                        rows.append((rss_mb(agent.pid), count, megabytes))
                        print(
                            f"  {policy.name}: {finished} generations, "
                            f"agent RSS {rows[-1][0]:.0f} MB",
                            file=sys.stderr,
                            flush=True,
                        )
        return rows
    finally:
        await kill_all(processes)
        shutil.rmtree(data_dir, ignore_errors=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generations", type=int, default=1000)
    parser.add_argument("--marks", default="100,500,1000", help="comma list, the last ≤ N")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--no-baseline", action="store_true", help="only the defaults")
    parser.add_argument(
        "--screenshots",
        action="store_true",
        help="let the demo call screenshot_preview (Chromium): ~170 KB more per variant, slow",
    )
    args = parser.parse_args()
    args.marks = [int(m) for m in args.marks.split(",") if int(m) <= args.generations]
    policies = POLICIES[1:] if args.no_baseline else POLICIES
    results = {policy.name: await measure(policy, args) for policy in policies}

    heads = [f"RSS@{m}" for m in args.marks]
    print(f"\nagent RSS (MB) over demo generations, {args.concurrency} at a time\n")
    print(f"| policy | {' | '.join(heads)} | retained | retained MB | last/previous |")
    print(f"|---|{'---:|' * len(heads)}---:|---:|---:|")
    for name, rows in results.items():
        ratio = rows[-1][0] / rows[-2][0] if len(rows) > 1 else float("nan")
        cells = " | ".join(f"{rss:.0f}" for rss, _, _ in rows)
        count, megabytes = rows[-1][1], rows[-1][2]
        print(f"| {name} | {cells} | {count} | {megabytes:.1f} | {ratio:.2f} |")
    defaults = results["defaults"]
    if len(defaults) > 1:
        ratio = defaults[-1][0] / defaults[-2][0]
        verdict = "met" if abs(ratio - 1) <= 0.10 else "NOT MET"
        print(f"\ntarget: defaults' last two marks within 10% ({ratio:.2f}): {verdict}")
    if "count only (before)" in results:
        before = results["count only (before)"][-1][0]
        print(f"defaults / before at the last mark: {defaults[-1][0] / before:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
