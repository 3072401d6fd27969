"""Rolling updates lose nothing (issue 38): real processes, two of each service.

Each service is replaced in turn (SIGTERM, wait for it to exit by itself, start a new one)
while generations run through it, from browsers of both protocols: resumable ones (the
built-in UI's: re-attach after any close that is not final, through another gateway) and
upstream ones (which cannot resume). Every generation completes with 1000, no socket
closes without a close frame (1006), and every replaced process exits 0. A gateway that
crashes (SIGKILL) loses no resumable generation either: it resumes through the other one.

The demo model is paced so a generation lasts a few seconds: long enough to be running
when each restart starts. The tests wait on events (frames, exits, log lines), never time.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from services.gateway.drain import SERVICE_RESTART
from services.gateway.relay import TRY_AGAIN_LATER
from tests.processes import Service, base_env, start_service
from tests.suite import create_params

FINAL = (1000, 4332, 4333)
NO_CLOSE_FRAME = 1006
METRICS = ("--metrics-listen", "127.0.0.1:0")
CODE_FRAMES = ("setCode", "appendCode")


@dataclass
class Fleet:
    """Two tool workers, two named agents, two gateways; `replace` is a rolling update's
    step, and `settled` is set while no service is being replaced."""

    tmp: Path
    env: dict[str, str]
    tools: list[Service] = field(default_factory=list)
    agents: list[Service] = field(default_factory=list)
    gateways: list[Service] = field(default_factory=list)
    # The gateways a load balancer would send sockets to: not those asked to stop.
    live: list[Service] = field(default_factory=list)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    exits: dict[str, int] = field(default_factory=dict)
    retired: list[Service] = field(default_factory=list)
    _booting: asyncio.Task[None] | None = None

    def complaints(self) -> list[str]:
        """Every warning and error any service (replaced ones included) logged: what a
        failure message needs."""
        services = [*self.retired, *self.gateways, *self.agents, *self.tools]
        return [
            f"{s.name}:{s.port} {line.strip()[:400]}"
            for s in services
            for line in s.log
            if '"level": "warning"' in line or '"level": "error"' in line
        ]

    def url(self, not_this: str | None = None) -> str:
        """A live gateway's socket URL, another than `not_this` when there is one."""
        urls = [ws_url(g) for g in self.live]
        return next((u for u in urls if u != not_this), urls[0])

    async def start_tools(self, port: int = 0) -> Service:
        return await start_service("tools", ["--listen", f"127.0.0.1:{port}", *METRICS], self.env)

    async def start_agent(self, i: int, port: int = 0) -> Service:
        env = {
            **self.env,
            "S2C_AGENT_NAME": f"agent-{i}",  # the same name after a restart
            "S2C_DATA_DIR": str(self.tmp / f"agent-{i}"),
            "S2C_TOOLS_ADDR": ",".join(f"127.0.0.1:{t.port}" for t in self.tools),
        }
        return await start_service("agent", ["--listen", f"127.0.0.1:{port}", *METRICS], env)

    async def start_gateway(self) -> Service:
        agents = ",".join(f"127.0.0.1:{a.port}" for a in self.agents)
        return await start_service(
            "gateway", ["--port", "0"], {**self.env, "S2C_AGENT_ADDR": agents}
        )

    async def replace(self, kind: str, i: int, *, while_stopping: Any = None) -> None:
        """SIGTERM `kind` i and wait until it exits by itself; its replacement then boots
        in the background (`booted`): tools and agents on the same port (their clients
        name it), a gateway on a new one."""
        await self.booted()  # one replacement at a time
        self.settled.clear()
        services: list[Service] = getattr(self, kind)
        old = services[i]
        if old in self.live:
            self.live.remove(old)
        old.process.send_signal(signal.SIGTERM)
        if while_stopping is not None:
            await while_stopping()
        self.exits[f"{kind}[{i}]"] = await old.process.wait()
        self.retired.append(old)
        self._booting = asyncio.create_task(self._boot(kind, i, old.port))

    async def _boot(self, kind: str, i: int, port: int) -> None:
        if kind == "tools":
            self.tools[i] = await self.start_tools(port)
        elif kind == "agents":
            self.agents[i] = await self.start_agent(i, port)
        else:
            self.gateways[i] = await self.start_gateway()
            self.live.append(self.gateways[i])
        self.settled.set()

    async def booted(self) -> None:
        if self._booting is not None:
            await self._booting


def ws_url(gateway: Service) -> str:
    return f"ws://127.0.0.1:{gateway.port}/generate-code"


@asynccontextmanager
async def fleet(
    tmp: Path, *, tools: int = 2, agents: int = 2, pace_ms: int = 10
) -> AsyncIterator[Fleet]:
    # No browser in the tool workers: what drains there is the other tool calls, and six
    # processes with Chromium are more than CI's two cores carry quickly.
    f = Fleet(tmp, base_env(tmp, {"S2C_DEMO_PACE_MS": str(pace_ms), "S2C_SCREENSHOTS": "0"}))
    try:
        f.tools = list(await asyncio.gather(*(f.start_tools() for _ in range(tools))))
        f.agents = list(await asyncio.gather(*(f.start_agent(i) for i in range(agents))))
        f.gateways = list(await asyncio.gather(f.start_gateway(), f.start_gateway()))
        f.live = list(f.gateways)
        f.settled.set()
        yield f
    finally:
        if f._booting is not None:
            f._booting.cancel()
        for service in [*f.gateways, *f.agents, *f.tools]:
            if service.process.returncode is None:
                service.process.kill()
                await service.process.wait()


@dataclass
class Browser:
    """One generation, as a browser runs it: a resumable one re-attaches (after its last
    `seq`, through another live gateway) after every close that is not final."""

    fleet: Fleet
    resumable: bool
    frames: list[dict[str, Any]] = field(default_factory=list)
    closes: list[int | None] = field(default_factory=list)  # None: could not connect
    urls: list[str] = field(default_factory=list)  # each socket's, for failure messages
    lived_s: list[float] = field(default_factory=list)  # each socket's life, likewise
    errors: list[str] = field(default_factory=list)  # a socket's failure, as aiohttp said
    generation_id: str = ""
    seq: int = 0
    started: asyncio.Event = field(default_factory=asyncio.Event)  # its id arrived
    coding: asyncio.Event = field(default_factory=asyncio.Event)
    drop: asyncio.Event = field(default_factory=asyncio.Event)  # set: lose the socket now
    done: bool = False
    # Bumped on every frame and close, for watchers (bench/rolling.py) to wait on.
    version: int = 0
    _updated: asyncio.Event = field(default_factory=asyncio.Event)

    async def changed(self, since: int) -> int:
        """The version once it is past `since` (a frame arrived or a socket closed)."""
        while self.version == since and not self.done:
            self._updated.clear()
            await self._updated.wait()
        return self.version

    def _bump(self) -> None:
        self.version += 1
        self._updated.set()

    def completed_variants(self) -> set[int]:
        return {f["variantIndex"] for f in self.frames if f["type"] == "variantComplete"}

    async def run(self, url: str) -> None:
        # The built-in UI's params (append-only code), or the upstream UI's.
        first = create_params(resumable=True, codeStream="append")
        if not self.resumable:
            first = create_params()
        async with aiohttp.ClientSession() as session:
            while True:
                self.urls.append(url)
                opened = time.monotonic()
                self.closes.append(await self._socket(session, url, first))
                self.lived_s.append(round(time.monotonic() - opened, 1))
                self._bump()
                if self.closes[-1] in FINAL or not self.resumable or not self.generation_id:
                    self.done = True
                    self._bump()
                    return
                assert len(self.closes) < 12, f"no end in sight: {self.closes}"
                if self.closes[-1] == TRY_AGAIN_LATER:
                    await self.fleet.settled.wait()  # its agent is being replaced
                url = self.fleet.url(not_this=url)
                first = {
                    "resumeGenerationId": self.generation_id,
                    "afterSequence": self.seq,
                    "codeStream": "append",
                }

    async def _socket(
        self, session: aiohttp.ClientSession, url: str, first: dict[str, Any]
    ) -> int | None:
        try:
            async with session.ws_connect(url, max_msg_size=0) as ws:
                await ws.send_str(json.dumps(first))
                dropping = asyncio.ensure_future(self.drop.wait())
                receiving = asyncio.ensure_future(ws.receive())
                try:
                    while True:
                        await asyncio.wait({dropping, receiving}, return_when="FIRST_COMPLETED")
                        if dropping.done():
                            self.drop.clear()
                            await ws.close(code=1001)  # a browser's network went away
                            return 1001
                        message = receiving.result()
                        if message.type == aiohttp.WSMsgType.CLOSE:
                            # The code in the server's close frame, as a browser's close
                            # event has it (aiohttp's close_code may say 1006 when the
                            # server hangs up before its own reply went out).
                            return int(message.data)
                        if message.type != aiohttp.WSMsgType.TEXT:
                            if message.type == aiohttp.WSMsgType.ERROR:
                                self.errors.append(repr(message.data))
                            return ws.close_code
                        self._see(json.loads(message.data))
                        receiving = asyncio.ensure_future(ws.receive())
                finally:
                    dropping.cancel()
                    receiving.cancel()
        except aiohttp.ClientError:
            return None

    def _see(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        self._bump()
        self.seq = max(self.seq, frame.get("seq", 0))
        if frame["type"] == "generation":
            self.generation_id = frame["value"]
            self.started.set()
        elif frame["type"] in CODE_FRAMES:
            self.coding.set()


async def wave(
    f: Fleet, plan: list[tuple[int, bool]], *, until: str = "coding"
) -> tuple[list[Browser], list[Any]]:
    """Starts a browser per (live gateway index, resumable) and returns once each has
    its `until` event: "coding" (its generation streams code) or "started" (its id came)."""
    browsers = [Browser(f, resumable) for _, resumable in plan]
    tasks = [
        asyncio.create_task(b.run(ws_url(f.live[g])))
        for b, (g, _) in zip(browsers, plan, strict=True)
    ]
    await asyncio.gather(*(getattr(b, until).wait() for b in browsers))
    return browsers, tasks


def assert_all_complete(browsers: list[Browser], f: Fleet) -> None:
    for i, b in enumerate(browsers):
        said = "\n".join(
            [
                f"browser {i}: {b.resumable=} {b.closes} {b.errors} {b.urls} {b.lived_s}",
                *f.complaints(),
            ]
        )
        assert b.closes[-1] == 1000, said
        assert NO_CLOSE_FRAME not in b.closes, said
        assert b.completed_variants() == {0, 1}, b.frames[-5:]
        assert not [x for x in b.frames if x["type"] in ("error", "variantError")]


async def test_a_rolling_restart_then_a_gateway_crash_lose_no_generation(tmp_path: Path) -> None:
    # One fleet for both parts: six processes take most of this test's time to start.
    async with fleet(tmp_path) as f:
        # A gateway: its resumable socket is sent on (1012), its upstream one kept open.
        gateway_wave, tasks = await wave(f, [(0, True), (0, False), (1, True)])
        await f.replace("gateways", 0)
        # Booted before the next wave, so its generations do not run out while the new
        # gateway starts (`replace` waits for that first).
        await f.booted()
        # An agent: four generations through gateway 1, which takes its agents in turn,
        # so two run on each; both resumable browsers drop while agent-0 drains and
        # re-attach (served by the draining agent, or told 1013 and served after).
        agent_wave, more = await wave(f, [(0, True), (0, True), (0, False), (0, False)])
        tasks += more

        async def drop_resumables() -> None:
            for b in agent_wave[:2]:
                b.drop.set()

        await f.replace("agents", 0, while_stopping=drop_resumables)
        await f.booted()
        # A tool worker: the agents' calls go to the other one meanwhile.
        tools_wave, more = await wave(f, [(0, True), (0, False)])
        tasks += more
        await f.replace("tools", 0)
        await asyncio.gather(*tasks)
        rolled = [*gateway_wave, *agent_wave, *tools_wave]

        # A crash, not a drain: the sockets just die; the agent keeps the generations.
        await f.booted()
        crash_wave, tasks = await wave(f, [(0, True), (0, True)], until="started")
        crashed = f.live.pop(0)
        crashed.process.kill()
        await asyncio.gather(*tasks)

    assert f.exits == {"gateways[0]": 0, "agents[0]": 0, "tools[0]": 0}
    assert_all_complete(rolled, f)
    # The restarted gateway's resumable browser was told to go elsewhere, and went.
    assert SERVICE_RESTART in gateway_wave[0].closes
    # A dropped browser of the draining agent's re-attached (and completed, above).
    dropped = agent_wave[:2]
    assert all(1001 in b.closes for b in dropped)
    assert any(b.generation_id.startswith("agent-0-") for b in dropped)
    for b in crash_wave:
        said = "\n".join([f"{b.closes} {b.urls}", *f.complaints()])
        assert b.closes[0] == NO_CLOSE_FRAME, said  # what a crash looks like to a browser
        assert b.closes[-1] == 1000, said
        assert b.completed_variants() == {0, 1}
