"""`s2c up` and each service on a taken port name it and what to set; the supervisor
restarts a dying child with backoff and gives up on one that keeps dying."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from services import cli
from services.common.listen import EXIT_CANNOT_LISTEN
from services.supervise import ChildSpec, Port, RestartPolicy, supervise

FAST = RestartPolicy(first_delay_s=0.01, max_delay_s=0.04, max_restarts=3)


@contextmanager
def taken_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def s2c(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**_clean_env(), **(env or {})},
    )


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("S2C_")}


def test_up_on_a_taken_port_names_it_and_the_setting_and_starts_nothing(tmp_path: Path) -> None:
    with taken_port() as port:
        done = s2c("up", "--agents", "1", env={"S2C_GATEWAY_PORT": str(port)})

    assert done.returncode == 2
    assert f"port {port} (the gateway) is taken" in done.stderr
    assert "--port or S2C_GATEWAY_PORT" in done.stderr
    assert "s2c is up" not in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("service", "args", "setting"),
    [
        ("gateway", ["--port", "{port}"], "--port or S2C_GATEWAY_PORT"),
        (
            "agent",
            ["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:{port}"],
            "--metrics-listen HOST:PORT ('' turns it off) or S2C_AGENT_METRICS_PORT",
        ),
    ],
)
def test_a_service_on_a_taken_port_names_the_setting_and_exits_78(
    service: str, args: list[str], setting: str, tmp_path: Path
) -> None:
    with taken_port() as port:
        done = s2c(
            service,
            *(a.format(port=port) for a in args),
            env={"S2C_DATA_DIR": str(tmp_path), "S2C_LOG_FORMAT": "text"},
        )

    assert done.returncode == EXIT_CANNOT_LISTEN
    assert f"127.0.0.1:{port}" in done.stderr
    assert f"choose another with {setting}" in done.stderr
    assert "Traceback" not in done.stderr


def test_every_port_is_read_from_its_variable_and_a_bad_one_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for env, value in [
        ("S2C_GATEWAY_PORT", "7101"),
        ("S2C_AGENT_PORT", "7102"),
        ("S2C_AGENT_METRICS_PORT", "7103"),
        ("S2C_TOOLS_PORT", "7104"),
        ("S2C_TOOLS_METRICS_PORT", "7105"),
    ]:
        monkeypatch.setenv(env, value)
    up = cli.build_parser().parse_args(["up"])
    ports = (up.port, up.agent_port, up.agent_metrics_port, up.tools_port, up.tools_metrics_port)
    assert ports == (7101, 7102, 7103, 7104, 7105)
    agent = cli.build_parser().parse_args(["agent"])
    assert (agent.listen, agent.metrics_listen) == ("127.0.0.1:7102", "127.0.0.1:7103")
    tools = cli.build_parser().parse_args(["tools"])
    assert (tools.listen, tools.metrics_listen) == ("127.0.0.1:7104", "127.0.0.1:7105")
    assert cli.build_parser().parse_args(["gateway"]).port == 7101

    done = s2c("up", env={"S2C_AGENT_PORT": "fifty"})
    assert done.returncode == 2
    assert "--agent-port (or S2C_AGENT_PORT) must be a port number 1-65535, got 'fifty'" in (
        done.stderr
    )


def dying(message: str) -> ChildSpec:
    command = [sys.executable, "-c", f"import sys; sys.exit({message!r})"]
    return ChildSpec("dier", command, {}, (Port("dier", "127.0.0.1", free_port(), "--x"),))


def test_a_child_that_keeps_dying_is_restarted_with_backoff_then_given_up_on() -> None:
    out, err = io.StringIO(), io.StringIO()

    status = supervise(
        [dying("boom: no config")],
        "http://x/",
        lambda: False,
        policy=FAST,
        out=out,
        err=err,
        poll_s=0.01,
    )

    assert status == 1
    restarts = [line for line in err.getvalue().splitlines() if "restarting in" in line]
    assert [line.rsplit("restarting in ", 1)[1] for line in restarts] == [
        "0.01 s",
        "0.02 s",
        "0.04 s",
    ]
    assert (
        "giving up on dier: it exited 4 times in a row, the last time with status 1: "
        "boom: no config"
    ) in err.getvalue()
    assert "s2c is up" not in out.getvalue()


def test_a_child_that_cannot_listen_is_given_up_on_at_once() -> None:
    command = [
        sys.executable,
        "-c",
        f"import sys; print('ERROR port taken', file=sys.stderr); sys.exit({EXIT_CANNOT_LISTEN})",
    ]
    err = io.StringIO()

    status = supervise(
        [ChildSpec("gw", command, {}, ())],
        "u",
        lambda: False,
        policy=FAST,
        out=io.StringIO(),
        err=err,
        poll_s=0.01,
    )

    assert status == 1
    assert "s2c up: gw cannot listen: ERROR port taken" in err.getvalue()
    assert "restarting" not in err.getvalue()


def listener(port: Port) -> ChildSpec:
    serve = (
        "import signal, socket; s = socket.socket(); "
        f"s.bind(('127.0.0.1', {port.port})); s.listen(); signal.pause()"
    )
    return ChildSpec(port.owner, [sys.executable, "-c", serve], {}, (port,))


def test_up_is_announced_only_once_every_child_answers() -> None:
    ready, never = (Port(name, "127.0.0.1", free_port(), "--x") for name in ("a", "b"))
    silent = ChildSpec("b", [sys.executable, "-c", "import signal; signal.pause()"], {}, (never,))
    polls = 0

    def after_a_answered_for_20_polls() -> bool:
        nonlocal polls
        polls += ready.accepts()
        return polls > 20

    out = io.StringIO()
    status = supervise(
        [listener(ready), silent],
        "u",
        after_a_answered_for_20_polls,
        out=out,
        err=io.StringIO(),
        poll_s=0.01,
    )

    assert status == 0
    assert "s2c is up" not in out.getvalue()

    both = [listener(ready), listener(never)]
    out = io.StringIO()
    status = supervise(
        both,
        "http://u/",
        lambda: "s2c is up" in out.getvalue(),
        notice="demo model",
        out=out,
        err=io.StringIO(),
        poll_s=0.01,
    )

    assert status == 0
    assert out.getvalue() == "s2c is up: open http://u/\ndemo model\n"
    assert not ready.taken()  # both stopped
    assert not never.taken()
