"""The `s2c` command: run the services, alone or together, and generate from a shell."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.common.listen import EXIT_CANNOT_LISTEN, ListenError
from services.common.logs import setup_logging
from services.common.tracing import setup_tracing
from services.eval.command import add_parser as add_eval_parser
from services.supervise import ChildSpec, Port, supervise

if TYPE_CHECKING:  # the services import lazily: `s2c generate` needs none of them
    from services.agent.providers.factory import SessionFactory
    from services.agent.settings import AgentSettings

AGENT_PORT, TOOLS_PORT, GATEWAY_PORT = 50051, 50052, 7001
# /metrics of the gRPC services (the gateway serves its own on GATEWAY_PORT).
AGENT_METRICS_PORT, TOOLS_METRICS_PORT = 9101, 9102
LOOPBACK = "127.0.0.1"
# Each port's variable (its flag wins); `s2c up` and the single services read the same.
PORT_ENVS = {
    "gateway": "S2C_GATEWAY_PORT",
    "agent": "S2C_AGENT_PORT",
    "agent_metrics": "S2C_AGENT_METRICS_PORT",
    "tools": "S2C_TOOLS_PORT",
    "tools_metrics": "S2C_TOOLS_METRICS_PORT",
}
# What to set when a service cannot bind: (service, its /metrics?) → the flag and variable.
LISTEN_SETTINGS = {
    ("gateway", False): "--port or S2C_GATEWAY_PORT (--host or S2C_GATEWAY_HOST)",
    ("agent", False): "--listen HOST:PORT or S2C_AGENT_PORT",
    ("agent", True): "--metrics-listen HOST:PORT ('' turns it off) or S2C_AGENT_METRICS_PORT",
    ("tools", False): "--listen HOST:PORT or S2C_TOOLS_PORT",
    ("tools", True): "--metrics-listen HOST:PORT ('' turns it off) or S2C_TOOLS_METRICS_PORT",
}


def serve_forever(service: str, main: Coroutine[Any, Any, None]) -> None:
    """Runs a service's main coroutine on uvloop where it is installed (not on Windows).
    Under load the services' event loops are their largest single cost (a wake-up per
    network read and per gRPC message); uvloop's loop is C where asyncio's is Python
    (bench/read_stack.py). Each service freezes its startup heap once it is up
    (grpc_server.freeze_startup_heap)."""
    try:
        try:
            import uvloop
        except ImportError:  # pragma: no cover - the dependency is skipped on Windows only
            import asyncio

            asyncio.run(main)
        else:
            uvloop.run(main)
    except ListenError as exc:
        # A taken port is the user's to change: say which setting, not a traceback.
        setting = LISTEN_SETTINGS[service, exc.metrics]
        logging.getLogger(f"services.{service}").error(f"{exc}; choose another with {setting}")
        raise SystemExit(EXIT_CANNOT_LISTEN) from None


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

    serve_forever("agent", serve())


def _run_tools(args: argparse.Namespace) -> None:
    from services.tools.server import ToolsServer
    from services.tools.settings import ToolsSettings

    settings = replace(
        ToolsSettings.from_env(), listen=args.listen, metrics_listen=args.metrics_listen
    )
    bootstrap("tools", [*settings.credentials.secrets(), settings.grpc_security.token], args)

    async def serve() -> None:
        await ToolsServer(settings).serve()

    serve_forever("tools", serve())


def _run_gateway(args: argparse.Namespace) -> None:
    from services.gateway.app import serve
    from services.gateway.settings import GatewaySettings

    settings = replace(GatewaySettings.from_env(), host=args.host, port=args.port)
    bootstrap("gateway", [settings.access.token, settings.grpc_security.token], args)
    serve_forever("gateway", serve(settings))


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


def _agent_specs(args: argparse.Namespace, me: list[str], env: dict[str, str]) -> list[ChildSpec]:
    """Agent i, named agent-<i>, listens on agent_port + 100 i, its metrics on
    agent_metrics_port + 100 i."""
    specs = []
    for i in range(args.agents):
        name = f"agent-{i}"
        # One host, so the host name (the default) would name them all alike.
        agent_env = {**env, "S2C_AGENT_NAME": name}
        if i and not env.get("S2C_DATABASE_URL"):
            # A SQLite run store is one process's (at start it closes every run left
            # running); the gateway sends each generation back to its owner, so each
            # agent reading only its own file is enough.
            agent_env["S2C_DATA_DIR"] = str(
                Path(env.get("S2C_DATA_DIR", ".s2c-data")) / f"agent-{i}"
            )
        base = " (agent i on it + 100 i)" if args.agents > 1 else ""
        ports = (
            Port(
                name, LOOPBACK, args.agent_port + 100 * i, f"--agent-port or S2C_AGENT_PORT{base}"
            ),
            Port(
                f"{name}'s /metrics",
                LOOPBACK,
                args.agent_metrics_port + 100 * i,
                f"--agent-metrics-port or S2C_AGENT_METRICS_PORT{base}",
            ),
        )
        command = [*me, "agent", "--listen", _address(ports[0]), "--metrics-listen"]
        specs.append(ChildSpec(name, [*command, _address(ports[1])], agent_env, ports))
    return specs


def _tools_specs(args: argparse.Namespace, me: list[str], env: dict[str, str]) -> list[ChildSpec]:
    """Tool worker i listens on tools_port + i, its metrics on tools_metrics_port + i."""
    specs = []
    base = " (worker i on it + i)" if args.tools_workers > 1 else ""
    for i in range(args.tools_workers):
        ports = (
            Port(
                f"tools-{i}", LOOPBACK, args.tools_port + i, f"--tools-port or S2C_TOOLS_PORT{base}"
            ),
            Port(
                f"tools-{i}'s /metrics",
                LOOPBACK,
                args.tools_metrics_port + i,
                f"--tools-metrics-port or S2C_TOOLS_METRICS_PORT{base}",
            ),
        )
        command = [*me, "tools", "--listen", _address(ports[0]), "--metrics-listen"]
        specs.append(ChildSpec(f"tools-{i}", [*command, _address(ports[1])], env, ports))
    return specs


def _address(port: Port) -> str:
    return f"{port.host}:{port.port}"


def _up(args: argparse.Namespace) -> int:
    """Runs tools worker(s), the agents and the gateway as supervised child processes."""
    try:
        args.agents = _agent_count(args.agents)
    except ValueError as exc:
        print(f"s2c up: {exc}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    # Ctrl-C on a laptop: the gateway's upstream sockets get 30 s, within the 40 s that
    # the supervisor gives every child before it kills them (never a 1006).
    env.setdefault("S2C_DRAIN_S", "30")
    me = [sys.executable, "-m", "services.cli"]
    tools = _tools_specs(args, me, env)
    env["S2C_TOOLS_ADDR"] = ",".join(_address(spec.ports[0]) for spec in tools)
    agents = _agent_specs(args, me, env)
    # The gateway's agents; generation ids name their owner (agent-<i>), not a position.
    env["S2C_AGENT_ADDR"] = ",".join(_address(spec.ports[0]) for spec in agents)
    gateway_port = Port("the gateway", args.host, args.port, "--port or S2C_GATEWAY_PORT")
    gateway_command = [*me, "gateway", "--host", args.host, "--port", str(args.port)]
    gateway = ChildSpec("gateway", gateway_command, env, (gateway_port,))
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    notice = ""
    if not _has_model_key(env):
        notice = (
            "No model API key is configured: generations run the built-in demo model.\n"
            f"Set {' or '.join(_model_key_envs())} (or add a key in the UI's settings) to "
            "use a real model."
        )
    url = f"http://{args.host}:{args.port}/"
    return supervise([*tools, *agents, gateway], url, lambda: stopping, notice=notice)


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


def _port_argument(
    parser: argparse.ArgumentParser,
    flag: str,
    role: str,
    default: int,
    note: str = "",
    *,
    zero: bool = False,
) -> None:
    """`flag`, defaulting to its variable, else `default`. argparse converts a string default
    only for the command that is run, so a bad variable fails only the command reading it."""
    env = PORT_ENVS[role]
    low = 0 if zero else 1

    def port(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if not low <= value <= 65535:
            raise argparse.ArgumentTypeError(
                f"{flag} (or {env}) must be a port number {low}-65535, got {raw!r}"
            )
        return value

    help_text = f"default: {env}, else {default}" + (f"; {note}" if note else "")
    parser.add_argument(flag, type=port, default=os.environ.get(env, str(default)), help=help_text)


def _default_listen(role: str, default: int) -> str:
    return f"{LOOPBACK}:{os.environ.get(PORT_ENVS[role], default)}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s2c", description=__doc__)
    parser.add_argument("--log-level", default=os.environ.get("S2C_LOG_LEVEL", "INFO"))
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="run the whole suite")
    up.add_argument("--host", default=os.environ.get("S2C_GATEWAY_HOST", LOOPBACK))
    _port_argument(up, "--port", "gateway", GATEWAY_PORT)
    _port_argument(up, "--agent-port", "agent", AGENT_PORT, "agent i: this + 100 i")
    _port_argument(up, "--agent-metrics-port", "agent_metrics", AGENT_METRICS_PORT)
    _port_argument(up, "--tools-port", "tools", TOOLS_PORT, "worker i: this + i")
    _port_argument(up, "--tools-metrics-port", "tools_metrics", TOOLS_METRICS_PORT)
    up.add_argument("--tools-workers", type=int, default=1)
    up.add_argument(
        "--agents",
        type=int,
        help="agent processes (default: S2C_AGENTS, else one per core)",
    )
    up.set_defaults(func=_up)
    agent = sub.add_parser("agent", help="run the agent service")
    agent.add_argument("--listen", default=_default_listen("agent", AGENT_PORT))
    agent.add_argument(
        "--metrics-listen",
        default=_default_listen("agent_metrics", AGENT_METRICS_PORT),
        help="'' turns it off",
    )
    agent.set_defaults(func=run_agent)
    tools = sub.add_parser("tools", help="run a tool worker")
    tools.add_argument("--listen", default=_default_listen("tools", TOOLS_PORT))
    tools.add_argument(
        "--metrics-listen",
        default=_default_listen("tools_metrics", TOOLS_METRICS_PORT),
        help="'' turns it off",
    )
    tools.set_defaults(func=_run_tools)
    gateway = sub.add_parser("gateway", help="run the WebSocket/HTTP gateway")
    gateway.add_argument("--host", default=os.environ.get("S2C_GATEWAY_HOST", LOOPBACK))
    _port_argument(gateway, "--port", "gateway", GATEWAY_PORT, "0 picks a free one", zero=True)
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
