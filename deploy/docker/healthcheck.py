#!/opt/venv/bin/python
"""The images' health probe (`/usr/local/bin/s2c-healthcheck`): exit 0 when the s2c service
this container runs answers healthy.

    s2c-healthcheck                           # the service is PID 1's command line
    s2c-healthcheck tools --listen 0.0.0.0:50052
    s2c-healthcheck --service s2c.tools.v1.Browser

The role and the port come from the s2c command line (PID 1's by default: `tini -- s2c ROLE
...`). The gateway must answer `GET /healthz` with 200, a gRPC service SERVING on the
`grpc.health.v1` service "" (or on `--service NAME`). A part that only degrades the service
(the tool worker's browser, the agent's run store) never fails the probe, since a restart
would not mend it, but is printed, so `docker inspect` shows it in the health log.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

DEFAULTS = {"gateway": "7001", "agent": "127.0.0.1:50051", "tools": "127.0.0.1:50052"}
# The health service names of a role's optional parts (services/tools/browser_health.py,
# services/agent/runstore_health.py), and what it means when one is not SERVING.
DEGRADED_WHEN_DOWN = {
    "tools": {"s2c.tools.v1.Browser": "no browser: screenshot_preview and URL capture are off"},
    "agent": {"s2c.agent.v1.RunStore": "the run store is failing: runs are not recorded"},
}
TIMEOUT_S = 3.0


def option(args: list[str], name: str, default: str) -> str:
    """The value of `--name VALUE` or `--name=VALUE` in `args`, else `default`."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def pid1_command() -> list[str]:
    return [a.decode() for a in Path("/proc/1/cmdline").read_bytes().split(b"\0") if a]


def grpc_target(listen: str) -> str:
    host, _, port = listen.rpartition(":")
    if host in ("", "0.0.0.0", "[::]", "::"):
        host = "127.0.0.1"
    return f"{host}:{port}"


def check_gateway(args: list[str]) -> int:
    url = f"http://127.0.0.1:{option(args, '--port', DEFAULTS['gateway'])}/healthz"
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        if response.status != 200:
            return 1
        body = json.loads(response.read() or b"{}")
    if body.get("status") != "ok":
        print(f"degraded: {json.dumps(body, sort_keys=True)}")
    return 0


def check_grpc(role: str, args: list[str], service: str | None) -> int:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    serving = health_pb2.HealthCheckResponse.SERVING
    target = grpc_target(option(args, "--listen", DEFAULTS[role]))
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)

        def status(name: str) -> int | None:
            """The service's status; None when the server has no such part (e.g. a worker
            with screenshots turned off has no browser)."""
            request = health_pb2.HealthCheckRequest(service=name)
            try:
                return int(stub.Check(request, timeout=TIMEOUT_S).status)
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.NOT_FOUND:
                    return None
                raise

        if service is not None:
            return 0 if status(service) == serving else 1
        if status("") != serving:
            return 1
        for name, meaning in DEGRADED_WHEN_DOWN.get(role, {}).items():
            if status(name) == health_pb2.HealthCheckResponse.NOT_SERVING:
                print(f"degraded: {name} is not SERVING ({meaning}; the log says why)")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="s2c-healthcheck")
    parser.add_argument("--service", help="a gRPC health service name that must be SERVING")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="default: PID 1's")
    args = parser.parse_args(argv)
    command = args.command or pid1_command()
    role = next((a for a in command if a in DEFAULTS), None)
    if role is None:
        print("s2c-healthcheck: no s2c service named (gateway, agent or tools)", file=sys.stderr)
        return 1
    rest = command[command.index(role) + 1 :]
    if role == "gateway":
        return check_gateway(rest)
    return check_grpc(role, rest, args.service)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as exc:  # any failure to get an answer means unhealthy
        print(f"s2c-healthcheck: {exc}", file=sys.stderr)
        sys.exit(1)
