"""The `s2c` command: run the services, alone or together, and generate from a shell."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.common.logs import setup_logging
from services.common.tracing import setup_tracing
from services.eval.command import add_parser as add_eval_parser

if TYPE_CHECKING:  # the services import lazily: `s2c generate` needs none of them
    from services.agent.providers.factory import SessionFactory
    from services.agent.settings import AgentSettings

AGENT_PORT, TOOLS_PORT, GATEWAY_PORT = 50051, 50052, 7001
# /metrics of the gRPC services (the gateway serves its own on GATEWAY_PORT).
AGENT_METRICS_PORT, TOOLS_METRICS_PORT = 9101, 9102


def serve_forever(main: Coroutine[Any, Any, None]) -> None:
    """Runs a service's main coroutine on uvloop where it is installed (not on Windows).
    Under load the services' event loops are their largest single cost (a wake-up per
    network read and per gRPC message); uvloop's loop is C where asyncio's is Python
    (bench/read_stack.py). Each service freezes its startup heap once it is up
    (grpc_server.freeze_startup_heap)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - the dependency is skipped on Windows only
        import asyncio

        asyncio.run(main)
    else:
        uvloop.run(main)


def bootstrap(service: str, secrets: Sequence[str], args: argparse.Namespace) -> None:
    """What every service process does first, the same way: tracing (so trace context
    leaves each hop), then logging (scrubbing the service's secrets)."""
    setup_tracing(service)
    setup_logging(service, secrets, args.log_level)


def run_agent(
    args: argparse.Namespace, sessions: Callable[[AgentSettings], SessionFactory] | None = None
) -> None:
    """`s2c agent`. `sessions` builds the model-session factory from the settings; None:
    the configured providers (see `AgentServer`)."""
    from services.agent.providers.clients import forget_sdk_environment
    from services.agent.server import AgentServer
    from services.agent.settings import AgentSettings

    settings = replace(
        AgentSettings.from_env(), listen=args.listen, metrics_listen=args.metrics_listen
    )
    bootstrap("agent", [*settings.credentials.secrets(), settings.grpc_security.token], args)
    ignored = forget_sdk_environment(os.environ)
    if ignored:
        logging.getLogger("services.agent").warning(
            "ignoring %s: the model SDKs would send them to every server, local ones "
            "included (docs/models.md)",
            ", ".join(ignored),
        )

    async def serve() -> None:
        # gRPC channels belong to the loop they are created in: build inside it.
        await AgentServer(settings, sessions(settings) if sessions else None).serve()

    serve_forever(serve())


def _run_tools(args: argparse.Namespace) -> None:
    from services.tools.server import ToolsServer
    from services.tools.settings import ToolsSettings

    settings = replace(
        ToolsSettings.from_env(), listen=args.listen, metrics_listen=args.metrics_listen
    )
    bootstrap("tools", [*settings.credentials.secrets(), settings.grpc_security.token], args)

    async def serve() -> None:
        await ToolsServer(settings).serve()

    serve_forever(serve())


def _run_gateway(args: argparse.Namespace) -> None:
    from services.gateway.app import serve
    from services.gateway.settings import GatewaySettings

    settings = replace(GatewaySettings.from_env(), host=args.host, port=args.port)
    bootstrap("gateway", [settings.access.token, settings.grpc_security.token], args)
    serve_forever(serve(settings))


def _model_key_envs() -> list[str]:
    from services.agent.providers.registry import key_envs

    return key_envs()


def _has_model_key(env: dict[str, str]) -> bool:
    return any(env.get(k) for k in [*_model_key_envs(), "S2C_LOCAL_MODELS"])


def _agent_count(flag: int | None) -> int:
    """`--agents`, else S2C_AGENTS, else one per core; ValueError saying what is wrong."""
    raw = os.environ.get("S2C_AGENTS", "").strip()
    if flag is None and not raw:
        return os.cpu_count() or 1
    try:
        count = flag if flag is not None else int(raw)
    except ValueError:
        raise ValueError(f"S2C_AGENTS must be a whole number, got {raw!r}") from None
    if count < 1:
        raise ValueError(f"there must be at least 1 agent, got {count}")
    return count


def _agent_commands(
    args: argparse.Namespace, me: list[str], env: dict[str, str]
) -> list[tuple[list[str], dict[str, str]]]:
    """Agent i, named agent-<i>, listens on agent_port + 100 i, its metrics on 9101 + 100 i."""
    commands = []
    for i in range(args.agents):
        # One host, so the host name (the default) would name them all alike.
        agent_env = {**env, "S2C_AGENT_NAME": f"agent-{i}"}
        if i and not env.get("S2C_DATABASE_URL"):
            # A SQLite run store is one process's (at start it closes every run left
            # running); the gateway sends each generation back to its owner, so each
            # agent reading only its own file is enough.
            agent_env["S2C_DATA_DIR"] = str(
                Path(env.get("S2C_DATA_DIR", ".s2c-data")) / f"agent-{i}"
            )
        listen = f"127.0.0.1:{args.agent_port + 100 * i}"
        metrics = f"127.0.0.1:{AGENT_METRICS_PORT + 100 * i}"
        commands.append(
            ([*me, "agent", "--listen", listen, "--metrics-listen", metrics], agent_env)
        )
    return commands


def _up(args: argparse.Namespace) -> int:
    """Runs tools worker(s), the agents and the gateway as supervised child processes."""
    try:
        args.agents = _agent_count(args.agents)
    except ValueError as exc:
        print(f"s2c up: {exc}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    tool_ports = [args.tools_port + i for i in range(args.tools_workers)]
    env["S2C_TOOLS_ADDR"] = ",".join(f"127.0.0.1:{p}" for p in tool_ports)
    # The gateway's agents; generation ids name their owner (agent-<i>), not a position.
    env["S2C_AGENT_ADDR"] = ",".join(
        f"127.0.0.1:{args.agent_port + 100 * i}" for i in range(args.agents)
    )
    me = [sys.executable, "-m", "services.cli"]
    commands: list[tuple[list[str], dict[str, str]]] = [
        *[
            (
                [
                    *me,
                    "tools",
                    "--listen",
                    f"127.0.0.1:{p}",
                    "--metrics-listen",
                    f"127.0.0.1:{TOOLS_METRICS_PORT + i}",
                ],
                env,
            )
            for i, p in enumerate(tool_ports)
        ],
        *_agent_commands(args, me, env),
        ([*me, "gateway", "--host", args.host, "--port", str(args.port)], env),
    ]
    children: dict[int, subprocess.Popen[bytes]] = {}
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for i, (command, command_env) in enumerate(commands):
        children[i] = subprocess.Popen(command, env=command_env)
    url = f"http://{args.host}:{args.port}/"
    print(f"s2c is up: open {url}", flush=True)
    if not _has_model_key(env):
        print(
            "No model API key is configured: generations run the built-in demo model.\n"
            f"Set {' or '.join(_model_key_envs())} (or add a key in the UI's settings) to "
            "use a real model.",
            flush=True,
        )
    restarts: dict[int, float] = {}
    while not stopping:
        time.sleep(0.2)
        for i, child in list(children.items()):
            if child.poll() is None or stopping:
                continue
            # Supervision: restart a crashed service, but not in a tight loop.
            if time.monotonic() - restarts.get(i, 0.0) < 1.0:
                time.sleep(1.0)
            command, command_env = commands[i]
            print(f"s2c: {' '.join(command[3:])} exited ({child.returncode}); restarting")
            restarts[i] = time.monotonic()
            children[i] = subprocess.Popen(command, env=command_env)
    for child in reversed(list(children.values())):
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 40
    for child in children.values():
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
    return 0


def _generate(args: argparse.Namespace) -> int:
    from services.cli_generate import generate

    return generate(args)


def _mcp(args: argparse.Namespace) -> int:
    """`s2c mcp`: no tracing set up, since an OTLP console exporter would write spans to
    stdout, which is the protocol here."""
    import asyncio

    from services.mcp.settings import McpSettings
    from services.mcp.stdio import serve_stdio

    try:
        settings = replace(
            McpSettings.from_env(read_files=True), agent_addr=args.agent.split(",")[0].strip()
        )
    except ValueError as exc:
        print(f"s2c mcp: {exc}", file=sys.stderr)
        return 2
    setup_logging("mcp", [settings.grpc_security.token], args.log_level)
    asyncio.run(serve_stdio(settings))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s2c", description=__doc__)
    parser.add_argument("--log-level", default=os.environ.get("S2C_LOG_LEVEL", "INFO"))
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="run the whole suite")
    up.add_argument("--host", default="127.0.0.1")
    up.add_argument("--port", type=int, default=GATEWAY_PORT)
    up.add_argument("--agent-port", type=int, default=AGENT_PORT)
    up.add_argument("--tools-port", type=int, default=TOOLS_PORT)
    up.add_argument("--tools-workers", type=int, default=1)
    up.add_argument(
        "--agents",
        type=int,
        help="agent processes (default: S2C_AGENTS, else one per core)",
    )
    up.set_defaults(func=_up)
    agent = sub.add_parser("agent", help="run the agent service")
    agent.add_argument("--listen", default=f"127.0.0.1:{AGENT_PORT}")
    agent.add_argument(
        "--metrics-listen", default=f"127.0.0.1:{AGENT_METRICS_PORT}", help="'' turns it off"
    )
    agent.set_defaults(func=run_agent)
    tools = sub.add_parser("tools", help="run a tool worker")
    tools.add_argument("--listen", default=f"127.0.0.1:{TOOLS_PORT}")
    tools.add_argument(
        "--metrics-listen", default=f"127.0.0.1:{TOOLS_METRICS_PORT}", help="'' turns it off"
    )
    tools.set_defaults(func=_run_tools)
    gateway = sub.add_parser("gateway", help="run the WebSocket/HTTP gateway")
    gateway.add_argument("--host", default="127.0.0.1")
    gateway.add_argument("--port", type=int, default=GATEWAY_PORT)
    gateway.set_defaults(func=_run_gateway)
    gen = sub.add_parser("generate", help="generate code from an image or a text prompt")
    gen.add_argument("input", help="path to a screenshot (png/jpeg/webp/gif) or a text prompt")
    gen.add_argument("--stack", default="html_tailwind")
    gen.add_argument("--out", default="s2c-out")
    gen.add_argument("--agent", default=os.environ.get("S2C_AGENT_ADDR", "127.0.0.1:50051"))
    gen.add_argument("--variants", type=int, default=0)
    gen.add_argument("--model", action="append", default=[])
    gen.add_argument("--json", action="store_true", help="print events as JSON lines")
    gen.set_defaults(func=_generate)
    mcp = sub.add_parser("mcp", help="serve the MCP tools over stdio (docs/mcp.md)")
    mcp.add_argument("--agent", default=os.environ.get("S2C_AGENT_ADDR", "127.0.0.1:50051"))
    mcp.set_defaults(func=_mcp)
    add_eval_parser(sub, agent=os.environ.get("S2C_AGENT_ADDR", "127.0.0.1:50051"))
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    result = args.func(args)
    raise SystemExit(result or 0)


if __name__ == "__main__":
    main()
