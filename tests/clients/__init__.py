"""Clients of the agent service (`s2c generate`, the Node and grpcurl examples), each run
as its own process against the real suite (`tests.processes.running_processes`) on the
demo model. Shared helpers live here."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from tests.certs import make_pki
from tests.processes import MODEL_KEYS

REPO = Path(__file__).resolve().parents[2]
PROCESS_TIMEOUT_S = 90.0


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


GRPC_TOKEN = "clients-grpc-token-RECOGNISABLE-7"


@dataclass
class LockedDown:
    """Environments of a suite with TLS and a gRPC token, and of a client that may call it."""

    server_env: dict[str, str]
    client_env: dict[str, str]


def locked_down(directory: Path) -> LockedDown:
    pki = make_pki(directory)
    ca = str(pki.ca.cert_file)
    server = {
        "S2C_GRPC_TLS_CERT": str(pki.server.cert_file),
        "S2C_GRPC_TLS_KEY": str(pki.server.key_file),
        "S2C_GRPC_TLS_CA": ca,
        "S2C_GRPC_TOKEN": GRPC_TOKEN,
    }
    return LockedDown(server, {"S2C_GRPC_TLS_CA": ca, "S2C_GRPC_TOKEN": GRPC_TOKEN})


def client_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a client process: no model keys, no inherited agent address."""
    env = {k: v for k, v in os.environ.items() if k not in (*MODEL_KEYS, "S2C_AGENT_ADDR")}
    env.update(extra or {})
    return env


async def run(
    *argv: str,
    env: Mapping[str, str] | None = None,
    cwd: Path = REPO,
    time_limit: float = PROCESS_TIMEOUT_S,
) -> Finished:
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=client_env(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), time_limit)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return Finished(process.returncode, out.decode(), err.decode())


async def s2c(*args: str, env: Mapping[str, str] | None = None, cwd: Path = REPO) -> Finished:
    """`s2c ARGS` (the console script's module, run by this interpreter)."""
    return await run(sys.executable, "-m", "services.cli", *args, env=env, cwd=cwd)


def closed_port() -> int:
    """A local port nothing listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def file_names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def write_png(path: Path, color: str = "#3366cc") -> Path:
    Image.new("RGB", (96, 64), color).save(path, format="PNG")
    return path


def assert_complete_document(html: str) -> None:
    assert html.lstrip().lower().startswith("<!doctype html>"), html[:200]
    assert html.rstrip().endswith("</html>"), html[-200:]


def json_values(text: str) -> list[Any]:
    """Every JSON value of a stream of concatenated (e.g. pretty-printed) JSON values."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return values
        value, position = decoder.raw_decode(text, position)
        values.append(value)
