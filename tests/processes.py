"""Start the real service processes (`s2c tools|agent|gateway`) on free ports."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.common.credentials import CREDENTIALS

# What would send a test's processes to a real model: every credential source's key (a
# provider with a key of its own declares its source there) and the pinned models.
MODEL_KEYS = (
    *(name for source in CREDENTIALS for name in source.key_envs),
    "S2C_MODELS",
    "S2C_LOCAL_MODELS",
)


@dataclass
class Service:
    name: str
    process: asyncio.subprocess.Process
    port: int
    log: list[str]
    drain: asyncio.Task[None] | None = None
    out: list[str] = field(default_factory=list)
    out_drain: asyncio.Task[None] | None = None
    logged: asyncio.Event = field(default_factory=asyncio.Event)  # set on each new log line

    async def wait_for_log(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first JSON log record (already logged or to come) that `predicate` accepts."""
        seen = 0
        while True:
            for line in self.log[seen:]:
                with contextlib.suppress(json.JSONDecodeError):
                    record = json.loads(line)
                    if isinstance(record, dict) and predicate(record):
                        return record
            seen = len(self.log)
            self.logged.clear()
            await self.logged.wait()

    async def output(self) -> list[str]:
        """Its stdout lines (spans, with S2C_OTEL_EXPORTER=console) once it has exited."""
        assert self.out_drain is not None
        await self.out_drain
        return self.out

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.returncode is None:
            self.process.send_signal(sig)
        return await asyncio.wait_for(self.process.wait(), 30)


def base_env(data_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in MODEL_KEYS}
    env.update(
        {
            "S2C_DATA_DIR": str(data_dir),
            "S2C_DEMO_PACE_MS": "0",
            "NO_PROXY": "127.0.0.1",
            # Every test client comes from 127.0.0.1: no per-client limits unless asked.
            "S2C_MAX_CONCURRENT_PER_CLIENT": "0",
            "S2C_STARTS_PER_MINUTE": "0",
            "S2C_MAX_WAITING_PER_CLIENT": "0",
            # The helpers read the services' JSON log lines (a developer may export text).
            "S2C_LOG_FORMAT": "json",
            # No live fidelity score (a render and an OCR per option of every image
            # create): tests/e2e/test_fidelity.py covers it; a module may turn it on.
            "S2C_FIDELITY_TIMEOUT_S": "0",
        }
    )
    env.update(extra or {})
    return env


async def start_service(name: str, args: list[str], env: Mapping[str, str]) -> Service:
    """Runs `s2c NAME ARGS` and waits for its "listening" log line (which carries the port)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.cli",
        name,
        *args,
        env=dict(env),
        stderr=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    assert process.stdout is not None
    # Logs are on stderr, spans on stdout: read both so neither pipe fills up.
    out: list[str] = []
    out_drain = asyncio.create_task(_drain(process.stdout, out))
    log: list[str] = []
    while True:
        line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        if not line:
            raise RuntimeError(f"{name} exited before listening:\n" + "".join(log))
        log.append(line)
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("msg") == f"{name} listening":
            service = Service(name, process, int(record["port"]), log, out=out, out_drain=out_drain)
            # Keep reading stderr so a chatty service never blocks on a full pipe.
            service.drain = asyncio.create_task(_drain(process.stderr, log, service.logged))
            return service


async def _drain(
    stream: asyncio.StreamReader, log: list[str], appended: asyncio.Event | None = None
) -> None:
    while line := await stream.readline():
        log.append(line.decode())
        if appended is not None:
            appended.set()


@dataclass
class Processes:
    tools: Service
    agent: Service
    gateway: Service

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.gateway.port}/generate-code"


@asynccontextmanager
async def running_processes(
    data_dir: Path, extra_env: Mapping[str, str] | None = None
) -> AsyncIterator[Processes]:
    env = base_env(data_dir, extra_env)
    metrics = ["--metrics-listen", "127.0.0.1:0"]
    tools = await start_service("tools", ["--listen", "127.0.0.1:0", *metrics], env)
    agent = await start_service(
        "agent",
        ["--listen", "127.0.0.1:0", *metrics],
        {**env, "S2C_TOOLS_ADDR": f"127.0.0.1:{tools.port}"},
    )
    gateway = await start_service(
        "gateway",
        ["--port", "0"],
        {**env, "S2C_AGENT_ADDR": f"127.0.0.1:{agent.port}"},
    )
    try:
        yield Processes(tools, agent, gateway)
    finally:
        for service in (gateway, agent, tools):
            if service.process.returncode is None:
                service.process.kill()
                await service.process.wait()
