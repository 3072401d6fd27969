"""Floor bench: the agent's CPU per model delta against the least any Python client pays.

Run alone from the repository root:

    .venv/bin/python bench/floor.py                      # 20 000 deltas, 3 runs each: ~1 min
    .venv/bin/python bench/floor.py --deltas 2000 --runs 1 --providers responses,chat
    .venv/bin/python bench/floor.py --baseline 0863e9b   # also the agent at that commit

What runs. One fake model server process serves all four APIs from bytes computed
before it listens: one create_file whose JSON arguments (`{"path":…,"content":…}`)
stream as `--deltas` deltas of 8 bytes each (OpenAI Responses
`response.function_call_arguments.delta`, Chat Completions `tool_calls[].function.arguments`,
Anthropic `input_json_delta`), then, for the request that carries the tool's result, a
short text turn. Gemini sends function arguments whole, so its row streams the page as
8-byte *text* parts (what gemini.py reads as one delta each; the engine takes the page
from the final text). The server writes `--write-bytes` at a time, as fast as the
reader takes them.

* Floor: a separate process POSTs to the same fake with httpx and reads the stream line
  by line, `json.loads` on every `data:` line: CPU per event (`time.process_time`, best
  of `--runs`), the bytes' receive included.
* Agent: real `s2c tools` and `s2c agent` processes with that provider's base URL pointed
  at the fake; this process runs GenerateCode over gRPC (one variant, the model pinned)
  and reads every event. The agent's CPU (/proc/<pid>/stat, user + system, before and
  after; best of `--runs`) divided by the deltas: SSE parse, argument scan, event log
  and gRPC out, plus the turn's fixed costs (request, tool call, run store).
  `--baseline REV` also runs an agent from a git worktree of REV (removed afterwards).

Each run checks that the agent's final code is the streamed page. Nothing is asserted
about times; the last column says whether the issue's target (≤ 5x the floor) is met.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

SCRIPT: Final = Path(__file__).resolve()
ROOT: Final = SCRIPT.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find bench/

from bench.floor_streams import PROVIDERS, Provider, arguments_for, serve  # noqa: E402
from bench.load import MODEL_KEYS  # noqa: E402
from bench.procs import cpu_seconds, spawn  # noqa: E402

TARGET_RATIO: Final = 5.0


# -- the floor client (its own process) --------------------------------------------------------


def floor(url: str, body: dict[str, Any], runs: int) -> None:
    """Prints {"events": …, "cpu_s": best CPU of one read of the stream}."""
    import httpx

    best, events = float("inf"), 0
    with httpx.Client(timeout=60) as client:
        for _ in range(runs + 1):  # the first one warms up
            start = time.process_time()
            events = 0
            with client.stream("POST", url, json=body) as response:
                response.raise_for_status()
                for line in response.iter_lines():
                    if line.startswith("data:") and line[5:].strip() != "[DONE]":
                        json.loads(line[5:])
                        events += 1
            spent = time.process_time() - start
            best = min(best, spent) if events else best
    print(json.dumps({"events": events, "cpu_s": best}), flush=True)


async def measure_floor(origin: str, provider: Provider, runs: int) -> tuple[int, float]:
    args = [str(SCRIPT), "--floor", origin + provider.path, json.dumps(provider.floor_body)]
    process = await spawn([*args, "--runs", str(runs)], 0, stdout=subprocess.PIPE)
    out, _ = await process.communicate()
    result = json.loads(out)
    return int(result["events"]), float(result["cpu_s"])


# -- the agent ---------------------------------------------------------------------------------


@dataclass
class Service:
    process: asyncio.subprocess.Process
    port: int
    log: list[str]
    drain: asyncio.Task[None]

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
        await self.process.wait()
        self.drain.cancel()


async def start_service(name: str, args: Sequence[str], env: dict[str, str], cwd: Path) -> Service:
    """`s2c NAME ARGS` run from `cwd` (a worktree for the baseline), once it listens."""
    argv = ["-m", "services.cli", name, "--listen", "127.0.0.1:0", "--metrics-listen", "", *args]
    process = await spawn(
        argv, 0, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    log: list[str] = []
    while line := (await asyncio.wait_for(process.stderr.readline(), 60)).decode():
        log.append(line)
        with contextlib.suppress(json.JSONDecodeError):
            record = json.loads(line)
            if record.get("msg") == f"{name} listening":
                drain = asyncio.create_task(_drain(process.stderr, log))
                return Service(process, int(record["port"]), log, drain)
    raise RuntimeError(f"{name} exited before listening:\n" + "".join(log[-20:]))


async def _drain(stream: asyncio.StreamReader, log: list[str]) -> None:
    while line := await stream.readline():
        log.append(line.decode())
        del log[:-200]


async def generate(port: int, model: str) -> tuple[str, int]:
    """One GenerateCode: (the variant's final code, events received)."""
    import grpc
    from s2c.agent.v1 import agent_service_pb2 as pb
    from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

    request = pb.GenerateCodeRequest(
        generation_id=uuid.uuid4().hex,
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_TEXT,
        stack=pb.STACK_HTML_TAILWIND,
        models=[model],
        variant_count=1,
        asset_extraction_enabled=False,
        image_generation_enabled=False,
    )
    request.prompt.text = "A bakery's landing page"
    code, events, failure = "", 0, ""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        async for message in pb_grpc.AgentServiceStub(channel).GenerateCode(request):
            for event in message.events:
                events += 1
                kind = event.WhichOneof("payload")
                if kind == "code_snapshot":
                    code = event.code_snapshot.content
                elif kind in ("variant_error", "generation_error"):
                    failure = getattr(event, kind).message
    if failure:
        raise RuntimeError(f"{model}: {failure}")
    return code, events


async def measure_agent(agent: Service, provider: Provider, deltas: int, runs: int) -> float:
    """Best agent CPU seconds of one generation (after one to warm up)."""
    html, _ = arguments_for(deltas)
    best = float("inf")
    for i in range(runs + 1):
        before = cpu_seconds(agent.process.pid)
        try:
            code, _ = await generate(agent.port, provider.model)
        except RuntimeError as exc:
            errors = [line for line in agent.log if '"ERROR"' in line or "Traceback" in line]
            raise RuntimeError(f"{exc}; agent log: {''.join(errors[-3:])}") from exc
        spent = cpu_seconds(agent.process.pid) - before
        if code.strip() != html.strip():
            raise RuntimeError(f"{provider.title}: the final code is not the streamed page")
        if i:
            best = min(best, spent)
    return best


# -- the run -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    provider: str
    deltas: int
    floor_us: float  # per event
    agent_us: float  # per delta
    baseline_us: float | None = None

    @property
    def ratio(self) -> float:
        return self.agent_us / self.floor_us if self.floor_us else float("inf")


@dataclass(frozen=True)
class Options:
    deltas: int = 20_000
    runs: int = 3
    write_bytes: int = 4096
    providers: tuple[str, ...] = tuple(PROVIDERS)
    baseline: str | None = None


def agent_env(data_dir: Path, origin: str, tools_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in MODEL_KEYS}
    env.update({"S2C_DATA_DIR": str(data_dir), "NO_PROXY": "127.0.0.1", "S2C_LOG_FORMAT": "json"})
    env.update({"S2C_PREVIEW_REPLAY_MS": "0", "S2C_TOOLS_ADDR": f"127.0.0.1:{tools_port}"})
    # No model here takes a screenshot: the tool worker need not start a browser.
    env["S2C_SCREENSHOTS"] = "0"
    for provider in PROVIDERS.values():
        env.update(provider.env(origin))
    return env


@contextlib.contextmanager
def worktree(rev: str) -> Any:
    path = Path(tempfile.mkdtemp(prefix="floor-baseline-"))
    add = ["git", "worktree", "add", "--detach", str(path), rev]
    subprocess.run(add, cwd=ROOT, check=True, capture_output=True)
    try:
        yield path
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, check=False)


async def run(options: Options) -> list[Row]:
    with contextlib.ExitStack() as stack:
        data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="floor-")))
        argv = [str(SCRIPT), "--serve", "--deltas", str(options.deltas)]
        fake = await spawn(
            [*argv, "--write-bytes", str(options.write_bytes)], 0, stdout=subprocess.PIPE
        )
        services: list[Service] = []
        try:
            assert fake.stdout is not None
            origin = f"http://127.0.0.1:{int(await fake.stdout.readline())}"
            base_env = agent_env(data, origin, 0)
            tools = await start_service("tools", [], base_env, ROOT)
            services.append(tools)
            env = agent_env(data, origin, tools.port)
            agents = {"now": await start_service("agent", [], env, ROOT)}
            services.append(agents["now"])
            if options.baseline:
                tree = stack.enter_context(worktree(options.baseline))
                old_env = {**env, "S2C_DATA_DIR": str(data / "baseline")}
                agents["before"] = await start_service("agent", [], old_env, tree)
                services.append(agents["before"])
            rows = []
            for pid in options.providers:
                provider = PROVIDERS[pid]
                events, floor_s = await measure_floor(origin, provider, options.runs)
                spent = {
                    name: await measure_agent(agent, provider, options.deltas, options.runs)
                    for name, agent in agents.items()
                }
                deltas = options.deltas
                before = spent.get("before")
                rows.append(
                    Row(
                        provider.title,
                        deltas,
                        floor_s / events * 1e6,
                        spent["now"] / deltas * 1e6,
                        None if before is None else before / deltas * 1e6,
                    )
                )
            return rows
        finally:
            for service in services:
                await service.stop()
            fake.kill()
            await fake.wait()


def report(rows: Sequence[Row], options: Options) -> None:
    before = options.baseline is not None
    head = f"{'provider':<26}{'deltas':>8}{'floor µs/event':>16}{'agent µs/delta':>16}"
    head += f"{'ratio':>8}  target ≤ {TARGET_RATIO:g}x"
    if before:
        head += f"  {'agent before µs/delta':>22}{'speed-up':>10}"
    print(head)
    for row in rows:
        met = "met" if row.ratio <= TARGET_RATIO else "NOT MET"
        line = f"{row.provider:<26}{row.deltas:>8}{row.floor_us:>16.2f}{row.agent_us:>16.2f}"
        line += f"{row.ratio:>7.1f}x  {met:<13}"
        if before and row.baseline_us is not None:
            line += f"  {row.baseline_us:>22.2f}{row.baseline_us / row.agent_us:>9.1f}x"
        print(line.rstrip())
    print(
        f"floor: httpx line by line + json.loads per data line, CPU per event; agent: its"
        f" process CPU per delta, best of {options.runs}; writes of {options.write_bytes} B"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write-bytes", type=int, default=4096)
    parser.add_argument("--providers", default=",".join(PROVIDERS))
    parser.add_argument("--baseline", help="also measure the agent at this git revision")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--floor", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.deltas, args.write_bytes)
        return
    if args.floor:
        floor(args.floor[0], json.loads(args.floor[1]), args.runs)
        return
    unknown = set(args.providers.split(",")) - set(PROVIDERS)
    if unknown:
        parser.error(f"unknown providers {sorted(unknown)}; known: {', '.join(PROVIDERS)}")
    options = Options(
        args.deltas, args.runs, args.write_bytes, tuple(args.providers.split(",")), args.baseline
    )
    report(asyncio.run(run(options)), options)


if __name__ == "__main__":
    main()
