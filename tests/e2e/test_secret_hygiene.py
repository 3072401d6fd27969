"""Keys never leave the request: not in logs, run records, files, frames or responses.

The real processes run with recognisable keys in their environment, and requests carry
other recognisable keys (browser params, gRPC credentials). Every model API points at
a loopback port where nothing listens, so the providers fail at once with connection
errors: error paths are where keys leak. A second suite pins the demo model, so a
generation succeeds with the keys still present and the tool worker and the run store
see key-bearing requests.

Then everything the services wrote or answered is searched for every key: every log
line (the services are stopped first, so shutdown lines count too), every WebSocket
frame, every gRPC response, the run records from GetGeneration, and every byte of
every file under the data dir (SQLite store with its -wal/-shm, assets). Zero hits.
The run store must have recorded the runs, or the search would prove nothing.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as tpb
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc

from tests.processes import Processes, running_processes
from tests.suite import WsResult, create_params, png_data_url, run_ws

ENV_KEYS = {
    "OPENAI_API_KEY": "sk-RECOGNISABLE-env-openai-7f3a9c1e5b2d4f60",
    "ANTHROPIC_API_KEY": "sk-ant-RECOGNISABLE-env-anthropic-2b8e6d0f4a1c9e73",
    "GEMINI_API_KEY": "AIza-RECOGNISABLE-env-gemini-5c1f7a3e9d2b8064",
    "REPLICATE_API_TOKEN": "r8_RECOGNISABLE-env-replicate-9e4a2c6f0b8d1e57",
}
BROWSER_KEYS = {
    "openAiApiKey": "sk-RECOGNISABLE-browser-openai-3d7b1f9e5a2c8046",
    "anthropicApiKey": "sk-ant-RECOGNISABLE-browser-anthropic-8a2e4c6b0f1d9735",
    "geminiApiKey": "AIza-RECOGNISABLE-browser-gemini-1f5d9b3a7e2c6048",
    "replicateApiKey": "r8_RECOGNISABLE-browser-replicate-6c0a8e2f4b9d1357",
}
GRPC_CREDENTIALS = common_pb2.Credentials(
    providers={
        "openai": common_pb2.ProviderCredentials(
            api_key="sk-RECOGNISABLE-grpc-openai-4e8c2a6f0d1b9357"
        ),
        "anthropic": common_pb2.ProviderCredentials(
            api_key="sk-ant-RECOGNISABLE-grpc-anthropic-0a6e2c8f4b1d7935"
        ),
        "gemini": common_pb2.ProviderCredentials(
            api_key="AIza-RECOGNISABLE-grpc-gemini-9d3b7f1e5c2a8064"
        ),
        "replicate": common_pb2.ProviderCredentials(
            api_key="r8_RECOGNISABLE-grpc-replicate-2f6b0d4a8e1c9573"
        ),
    }
)
KEYS = [
    *ENV_KEYS.values(),
    *BROWSER_KEYS.values(),
    *(entry.api_key for entry in GRPC_CREDENTIALS.providers.values()),
]
# Each key, and its random tail alone: a key cut short or partly masked still leaks
# when that much of it shows.
NEEDLES = [(key, needle) for key in KEYS for needle in (key, key.rsplit("-", 1)[1])]

TIMEOUT_S = 60.0  # a bound on each call, so a hang fails instead of stalling the test


@asynccontextmanager
async def closed_port() -> AsyncIterator[str]:
    """A loopback base URL whose port is bound but not listening: connects fail at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def suite_env(closed: str, **extra: str) -> dict[str, str]:
    return {
        **ENV_KEYS,
        "OPENAI_BASE_URL": closed,
        "ANTHROPIC_BASE_URL": closed,
        "GEMINI_BASE_URL": closed,
        "REPLICATE_BASE_URL": closed,
        "S2C_LOCAL_BASE_URL": closed,
        "S2C_SCREENSHOTS": "0",
        **extra,
    }


def browser_params(closed: str, **overrides: object) -> dict[str, object]:
    return create_params(**BROWSER_KEYS, openAiBaseURL=closed, **overrides)


def frames_text(result: WsResult) -> bytes:
    return "\n".join(json.dumps(f) for f in result.frames).encode()


def tool_request(
    name: str, arguments: dict[str, Any], closed: str, *, with_keys: bool
) -> tpb.ExecuteToolRequest:
    args = struct_pb2.Struct()
    args.update(arguments)
    credentials = common_pb2.Credentials()
    if with_keys:
        credentials.CopyFrom(GRPC_CREDENTIALS)
        credentials.providers["replicate"].base_url = closed
        credentials.providers["gemini"].base_url = closed
    return tpb.ExecuteToolRequest(
        call=tpb.ToolCall(id=f"{name}-{with_keys}", name=name, arguments=args),
        context=tpb.ToolContext(
            input_images=[png_data_url()],
            credentials=credentials,
            flags=tpb.ToolFlags(
                image_generation_enabled=True,
                asset_extraction_enabled=True,
                has_input_images=True,
            ),
            asset_base_url="http://127.0.0.1:7001",
        ),
    )


KEYED_TOOL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("generate_images", {"prompts": ["a lighthouse at dusk"]}),
    ("remove_background", {"image_urls": ["https://127.0.0.1:9/product.png"]}),
    ("edit_image", {"prompt": "make it blue", "image_urls": ["https://127.0.0.1:9/a.png"]}),
    ("extract_assets", {"asset_descriptions": ["the logo, top left"]}),
]


async def keyed_tool_calls(suite: Processes, closed: str) -> dict[str, bytes]:
    """The key-needing tools, with the request's keys and with the worker's own."""
    answers: dict[str, bytes] = {}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.tools.port}") as channel:
        stub = tpb_grpc.ToolServiceStub(channel)
        listed = await stub.ListTools(
            tpb.ListToolsRequest(
                flags=tpb.ToolFlags(
                    image_generation_enabled=True,
                    asset_extraction_enabled=True,
                    has_input_images=True,
                ),
                credentials=GRPC_CREDENTIALS,
            ),
            timeout=TIMEOUT_S,
        )
        answers["ListTools response"] = str(listed).encode()
        for name, arguments in KEYED_TOOL_CALLS:
            for with_keys in (True, False):
                request = tool_request(name, arguments, closed, with_keys=with_keys)
                response = await stub.ExecuteTool(request, timeout=TIMEOUT_S)
                answers[f"ExecuteTool({name}, request keys={with_keys}) response"] = (
                    str(response).encode() + response.SerializeToString()
                )
    return answers


async def grpc_generation(suite: Processes, closed: str) -> dict[str, bytes]:
    """A generation over gRPC with keys in its credentials, one variant per provider."""
    credentials = common_pb2.Credentials()
    credentials.CopyFrom(GRPC_CREDENTIALS)
    for source in ("openai", "anthropic", "gemini"):
        credentials.providers[source].base_url = closed
    request = pb.GenerateCodeRequest(
        input_mode=pb.INPUT_MODE_TEXT,
        stack=pb.STACK_HTML_TAILWIND,
        prompt=pb.Prompt(text="A pricing page"),
        credentials=credentials,
        models=["gpt-5.5 (low effort)", "claude-sonnet-4-6", "gemini-3.5-flash (minimal thinking)"],
        variant_count=3,
    )
    events: list[bytes] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        async for message in stub.GenerateCode(request, timeout=TIMEOUT_S):
            events += [str(event).encode() for event in message.events]
        models = await stub.ListModels(
            pb.ListModelsRequest(credentials=GRPC_CREDENTIALS), timeout=TIMEOUT_S
        )
    return {"GenerateCode events": b"\n".join(events), "ListModels response": str(models).encode()}


def recorded_runs(data_dir: Path) -> dict[str, str]:
    """generation_id → status, straight from the SQLite run store."""
    with closing(sqlite3.connect(f"file:{data_dir / 'runs.sqlite3'}?mode=ro", uri=True)) as db:
        return dict(db.execute("SELECT generation_id, status FROM runs").fetchall())


async def run_records(suite: Processes, generation_ids: list[str]) -> dict[str, bytes]:
    records: dict[str, bytes] = {}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        for generation_id in generation_ids:
            response = await stub.GetGeneration(
                pb.GetGenerationRequest(generation_id=generation_id), timeout=TIMEOUT_S
            )
            records[f"GetGeneration({generation_id})"] = (
                str(response).encode() + response.SerializeToString()
            )
    return records


async def stop_and_collect_logs(suite: Processes) -> dict[str, bytes]:
    """Stops the services gracefully so their shutdown lines are captured too."""
    logs: dict[str, bytes] = {}
    for service in (suite.gateway, suite.agent, suite.tools):
        assert await service.stop(signal.SIGTERM) == 0, "".join(service.log[-10:])
        if service.drain is not None:
            await asyncio.wait_for(service.drain, TIMEOUT_S)
        logs[f"{service.name} log"] = "".join(service.log).encode()
    return logs


def files_under(data_dir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(data_dir)): str(path).encode() + b"\n" + path.read_bytes()
        for path in sorted(data_dir.rglob("*"))
        if path.is_file()
    }


def leaks(haystacks: Mapping[str, bytes]) -> list[str]:
    """Every key (or key tail) found, and where."""
    found = []
    for where, data in haystacks.items():
        for key, needle in NEEDLES:
            if needle.encode() in data:
                shown = "the key" if needle == key else f"the tail {needle!r} of"
                found.append(f"{shown} {key!r} is in {where}")
    return found


async def test_keys_never_leak_when_every_provider_fails(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with closed_port() as closed:
        async with running_processes(data_dir, suite_env(closed)) as suite:
            # Browser keys (which win over the environment), and the environment's own.
            browser, environment, over_grpc, tools = await asyncio.gather(
                run_ws(suite.ws_url, browser_params(closed)),
                run_ws(suite.ws_url, create_params(inputMode="text", prompt={"text": "A blog"})),
                grpc_generation(suite, closed),
                keyed_tool_calls(suite, closed),
            )
            records = await run_records(suite, sorted(recorded_runs(data_dir)))
            logs = await stop_and_collect_logs(suite)
        runs = recorded_runs(data_dir)  # after the stop: every record is closed
        files = files_under(data_dir)
        haystacks = {
            "WS frames (browser keys)": frames_text(browser),
            "WS frames (environment keys)": frames_text(environment),
            **over_grpc,
            **tools,
            **records,
            **logs,
            **files,
        }

    # The error paths really ran: every variant failed on its connection.
    for result in (browser, environment):
        assert result.close_code == 4332, result.frames[-3:]
        assert result.of("variantError"), [f["type"] for f in result.frames]
        assert all("Could not connect" in f["value"] for f in result.of("variantError"))
    assert b"generation_error" in over_grpc["GenerateCode events"]
    # The worker took the request's keys as present: it offered the tools that need them.
    assert b'name: "generate_images"' in tools["ListTools response"]
    assert b'name: "extract_assets"' in tools["ListTools response"]
    # The store recorded the three generations, so searching it means something.
    assert len(runs) == 3, runs
    assert set(runs.values()) == {"failed"}, runs
    assert len(records) == 3
    assert "runs.sqlite3" in files
    assert leaks({"a planted copy": KEYS[-1].encode()}), "the search finds nothing at all"
    assert leaks(haystacks) == []


async def test_keys_never_leak_from_a_successful_generation(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with closed_port() as closed:
        env = suite_env(closed, S2C_MODELS="demo")
        async with running_processes(data_dir, env) as suite:
            created = await run_ws(suite.ws_url, browser_params(closed))
            code = created.last_code(0)
            updated = await run_ws(
                suite.ws_url,
                browser_params(
                    closed,
                    generationType="update",
                    history=[
                        {"role": "user", "text": "A landing page", "images": [png_data_url()]},
                        {"role": "assistant", "text": code},
                        {"role": "user", "text": "Make the header blue"},
                    ],
                ),
            )
            records = await run_records(suite, sorted(recorded_runs(data_dir)))
            logs = await stop_and_collect_logs(suite)
        runs = recorded_runs(data_dir)
        files = files_under(data_dir)
        haystacks = {
            "WS frames (create)": frames_text(created),
            "WS frames (update)": frames_text(updated),
            **records,
            **logs,
            **files,
        }

    for result in (created, updated):
        assert result.close_code == 1000, result.frames[-3:]
        assert result.of("variantComplete")
        assert result.of("toolResult"), "the tool worker saw no key-bearing request"
    assert len(runs) == 2, runs
    assert set(runs.values()) == {"completed"}, runs
    assert all(b"<html" in record.lower() for record in records.values())
    assert "runs.sqlite3" in files
    assert leaks(haystacks) == []
