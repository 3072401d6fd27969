"""`s2c up`'s supervisor: checks its ports, runs the services as child processes, restarts
one that dies with backoff, and gives up (naming the child and its last error) on one that
keeps dying or cannot bind its port."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO

from services.common.listen import EXIT_CANNOT_LISTEN


@dataclass(frozen=True, slots=True)
class Port:
    """A port `s2c up` will have a child bind, and the setting that moves it."""

    owner: str  # "the gateway", "agent-1's /metrics"
    host: str
    port: int
    setting: str  # "--port or S2C_GATEWAY_PORT"

    def taken(self) -> bool:
        """Whether binding it fails now, as the child's bind would (SO_REUSEADDR on, as
        aiohttp and gRPC set it: a port in TIME_WAIT is free, one listened on is not)."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.host, self.port))
            except OSError:
                return True
        return False

    def accepts(self) -> bool:
        try:
            socket.create_connection((self.host, self.port), timeout=0.5).close()
        except OSError:
            return False
        return True

    def complaint(self) -> str:
        return (
            f"port {self.port} ({self.owner}) is taken by another program; "
            f"choose another with {self.setting}"
        )


@dataclass(frozen=True, slots=True)
class ChildSpec:
    name: str
    command: Sequence[str]
    env: dict[str, str]
    # What it binds; the first is the one that answers once the child is up.
    ports: tuple[Port, ...]


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """A dead child is restarted after `first_delay_s`, doubling up to `max_delay_s`; one
    that died `max_restarts` times in a row without staying up `stable_s` is given up on."""

    first_delay_s: float = 0.5
    max_delay_s: float = 16.0
    max_restarts: int = 5
    stable_s: float = 30.0


@dataclass
class Child:
    spec: ChildSpec
    err: IO[str]
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    failures: int = 0  # deaths in a row, each before it stayed up `stable_s`
    restart_at: float | None = None
    # Its last stderr lines (it logs there): what it said before it died.
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=40))
    _reader: threading.Thread | None = None

    def start(self) -> None:
        self.tail.clear()
        self.process = subprocess.Popen(
            list(self.spec.command), env=self.spec.env, stderr=subprocess.PIPE
        )
        self.started, self.restart_at = time.monotonic(), None
        stream = self.process.stderr
        assert stream is not None
        self._reader = threading.Thread(target=self._forward, args=(stream,), daemon=True)
        self._reader.start()

    def _forward(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode(errors="replace")
            self.tail.append(line.rstrip("\n"))
            self.err.write(line)
            self.err.flush()

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def last_error(self) -> str:
        """The last line that reads as an error (a log record at ERROR, a traceback's last
        line), else the last line it wrote; its output is read to the end first."""
        if self._reader is not None:
            self._reader.join(timeout=2)
        lines = [line for line in self.tail if line.strip()]
        for line in reversed(lines):
            if "ERROR" in line or "Error" in line or "error" in line:
                return line.strip()
        return lines[-1].strip() if lines else "(it printed nothing)"


def free_of_conflicts(specs: Sequence[ChildSpec], err: IO[str]) -> bool:
    """Every port a child will bind is free now; else each taken one is named, with what to
    set instead."""
    taken = [port for spec in specs for port in spec.ports if port.taken()]
    for port in taken:
        print(f"s2c up: {port.complaint()}", file=err)
    return not taken


def supervise(
    specs: Sequence[ChildSpec],
    url: str,
    stopping: Callable[[], bool],
    *,
    notice: str = "",
    policy: RestartPolicy = RestartPolicy(),
    out: IO[str] = sys.stdout,
    err: IO[str] = sys.stderr,
    poll_s: float = 0.2,
    stop_timeout_s: float = 40.0,
) -> int:
    """Runs the children until `stopping()`, then stops them (SIGTERM, the gateway first).
    0 when asked to stop, 1 after giving up on a child. "s2c is up" is printed once every
    child's first port answers while every child runs, then `notice`."""
    if not free_of_conflicts(specs, err):
        return 2
    children = [Child(spec, err) for spec in specs]
    for child in children:
        child.start()
    announced, status = False, 0
    while status == 0:
        time.sleep(poll_s)
        # A Ctrl-C reaches the children too: those that exit for it are not restarted.
        if stopping():
            break
        now = time.monotonic()
        for child in children:
            status = status or _tend(child, now, policy, err)
        if status or announced:
            continue
        if all(c.exited() is None and c.restart_at is None for c in children) and all(
            c.spec.ports[0].accepts() for c in children if c.spec.ports
        ):
            announced = True
            print(f"s2c is up: open {url}", file=out, flush=True)
            if notice:
                print(notice, file=out, flush=True)
    _stop_all(children, stop_timeout_s)
    return status


def _tend(child: Child, now: float, policy: RestartPolicy, err: IO[str]) -> int:
    """Restarts a dead child when its backoff is over; 1 when it is given up on."""
    if child.restart_at is not None:
        if now >= child.restart_at:
            child.start()
        return 0
    code = child.exited()
    if code is None:
        return 0
    name = child.spec.name
    if code == EXIT_CANNOT_LISTEN:  # the port will not free itself: say so and stop
        print(f"s2c up: {name} cannot listen: {child.last_error()}", file=err, flush=True)
        return 1
    child.failures = 1 if now - child.started >= policy.stable_s else child.failures + 1
    if child.failures > policy.max_restarts:
        print(
            f"s2c up: giving up on {name}: it exited {child.failures} times in a row, the "
            f"last time with status {code}: {child.last_error()}",
            file=err,
            flush=True,
        )
        return 1
    delay = min(policy.max_delay_s, policy.first_delay_s * 2 ** (child.failures - 1))
    print(
        f"s2c up: {name} exited with status {code} ({child.last_error()}); "
        f"restarting in {delay:g} s",
        file=err,
        flush=True,
    )
    child.restart_at = now + delay
    return 0


def _stop_all(children: Sequence[Child], timeout_s: float) -> None:
    """SIGTERM in reverse start order (the gateway drains first), then waits; what is still
    running at the deadline is killed."""
    running = [c.process for c in children if c.process is not None and c.exited() is None]
    for process in reversed(running):
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for process in running:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
