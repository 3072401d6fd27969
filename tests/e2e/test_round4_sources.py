"""Issue 35, items 10-12, replayed against the real gateway, agent and tool worker.

One stack for the module. Every place a model request may go is a loopback listener that
records each request and answers 401 (which the SDKs do not retry): the local server
(`S2C_LOCAL_BASE_URL`), one models-file endpoint of each kind (chat without a key, chat
and responses with their own key variables, Azure) and each provider's base URL
(OpenAI, Anthropic, OpenRouter, Gemini). A scripted Chat Completions fake plays the model that
names look-alike paths. The processes hold recognisable keys; so do the requests.

10: a key reaches only the endpoint it was configured for (a `local:` model takes none),
    and no client sends what the SDKs would read from the environment on their own.
11: look-alike, device and case-twin paths are refused on every way in.
12: a client-chosen generation id neither overwrites a record nor names another agent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
from aiohttp import web
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2

from services.common.errors import bad_request_violations
from tests.fakes import serve_on_loopback
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Text, chat_turn
from tests.processes import Processes, running_processes
from tests.suite import create_params, generation_events, generation_refusal, run_ws

pytestmark = pytest.mark.asyncio(loop_scope="module")

AGENT = "round4"
ENV_KEYS = {
    "OPENAI_API_KEY": "sk-ENV-openai-r4-7c1e9a30",
    "ANTHROPIC_API_KEY": "sk-ant-ENV-anthropic-r4-2b8d",
    "OPENROUTER_API_KEY": "sk-or-ENV-openrouter-r4-5f0a",
    "GEMINI_API_KEY": "AIza-ENV-gemini-r4-91c3",
    "AZURE_OPENAI_API_KEY": "az-ENV-azure-default-r4-66d2",
}
# Keys the models file names, one per keyed endpoint.
ENDPOINT_KEYS = {
    "VLLM_KEY": "vllm-ENDPOINT-r4-0d4e",
    "RESP_KEY": "resp-ENDPOINT-r4-a71b",
    "AZ_KEY": "az-ENDPOINT-r4-3c95",
}
BROWSER_KEYS = {
    "openai": "sk-BROWSER-openai-r4-4e2f",
    "anthropic": "sk-ant-BROWSER-r4-8a60",
    "openrouter": "sk-or-BROWSER-r4-c3d7",
    "gemini": "AIza-BROWSER-r4-19be",
}
# What the model SDKs would add to every request of every client on their own.
SDK_AMBIENT = {
    "OPENAI_CUSTOM_HEADERS": "X-Proxy-Auth: proxy-ENV-r4-e08f",
    "OPENAI_ORG_ID": "org-ENV-r4-71aa",
    "ANTHROPIC_CUSTOM_HEADERS": "X-Proxy-Auth: proxy-ENV-anthropic-r4-5d2c",
}
SECRETS = {
    *ENV_KEYS.values(),
    *ENDPOINT_KEYS.values(),
    *BROWSER_KEYS.values(),
    *(value.split(": ")[-1] for value in SDK_AMBIENT.values()),
}
# What each listener may receive: only the keys configured for it. A provider's base URL
# (`<SOURCE>_BASE_URL`) takes its source's key, the environment's or a request's.
ALLOWED = {
    "local": set(),
    "plain": set(),
    "vllm": {ENDPOINT_KEYS["VLLM_KEY"]},
    "resp": {ENDPOINT_KEYS["RESP_KEY"]},
    "az": {ENDPOINT_KEYS["AZ_KEY"]},
    **{
        source: {ENV_KEYS[f"{source.upper()}_API_KEY"], BROWSER_KEYS[source]}
        for source in ("openai", "anthropic", "openrouter", "gemini")
    },
}
# One model of each kind, by the listener it must reach.
MODELS = {
    "local": "local:qwen3",
    "plain": "plain:m",
    "vllm": "vllm:m",
    "resp": "resp:m",
    "az": "az:m",
    "openai": "gpt-5.5 (low thinking)",
    "anthropic": "claude-sonnet-4-6",
    "openrouter": "openrouter:qwen/qwen3-coder",
    "gemini": "gemini-3-flash-preview (minimal thinking)",
}
MODELS_FILE = """
[[endpoint]]
name = "plain"
base_url = "{plain}/v1"
[[endpoint.model]]
id = "m"

[[endpoint]]
name = "vllm"
base_url = "{vllm}/v1"
api_key_env = "VLLM_KEY"
[[endpoint.model]]
id = "m"

[[endpoint]]
name = "resp"
api = "responses"
base_url = "{resp}/v1"
api_key_env = "RESP_KEY"
[[endpoint.model]]
id = "m"

[[endpoint]]
name = "az"
api = "azure"
base_url = "{az}"
api_key_env = "AZ_KEY"
api_version = "2024-10-21"
[[endpoint.model]]
id = "m"

[[endpoint]]
name = "script"
base_url = "{script}"
[[endpoint.model]]
id = "m"
"""


@dataclass
class Listener:
    """Records every request (headers, query and body) and answers 401."""

    url: str = ""
    requests: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = "\n".join(f"{k}: {v}" for k, v in request.headers.items())
        self.requests.append(f"{request.path_qs}\n{headers}\n{body.decode('utf-8', 'replace')}")
        error = {"error": {"message": "invalid key", "type": "invalid_request_error"}}
        return web.json_response(error, status=401)

    def strays(self, allowed: set[str]) -> int:
        """Deliveries of a key this listener was not configured with."""
        return sum(s in text for text in self.requests for s in SECRETS - allowed)


@dataclass
class Stack:
    processes: Processes
    listeners: dict[str, Listener]
    script: FakeOpenAI

    @property
    def port(self) -> int:
        return self.processes.agent.port

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.processes.gateway.port}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    listeners = {name: Listener() for name in ALLOWED}
    runners = []
    for listener in listeners.values():
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", listener.handle)
        runner, listener.url = await serve_on_loopback(app)
        runners.append(runner)
    script = FakeOpenAI()
    await script.start()
    tmp = tmp_path_factory.mktemp("round4")
    models = tmp / "models.toml"
    urls = {name: listener.url for name, listener in listeners.items()}
    models.write_text(MODELS_FILE.format(script=script.base_url, **urls))
    env = {
        **ENV_KEYS,
        **ENDPOINT_KEYS,
        **SDK_AMBIENT,
        "OPENAI_BASE_URL": f"{urls['openai']}/v1",
        "ANTHROPIC_BASE_URL": urls["anthropic"],
        "OPENROUTER_BASE_URL": f"{urls['openrouter']}/api/v1",
        "GEMINI_BASE_URL": urls["gemini"],
        "S2C_LOCAL_BASE_URL": f"{listeners['local'].url}/v1",
        "S2C_MODELS_FILE": str(models),
        "S2C_AGENT_NAME": AGENT,
        # A finished generation leaves memory when the next one finishes (item 12).
        "S2C_RETAIN_GENERATIONS": "1",
        "S2C_SCREENSHOTS": "0",
    }
    try:
        async with running_processes(tmp, env) as processes:
            yield Stack(processes, listeners, script)
    finally:
        await script.stop()
        for runner in runners:
            await runner.cleanup()


def browser_credentials() -> common_pb2.Credentials:
    return common_pb2.Credentials(
        providers={s: common_pb2.ProviderCredentials(api_key=k) for s, k in BROWSER_KEYS.items()}
    )


def text_request(model: str, text: str = "a page", **fields: Any) -> pb.GenerateCodeRequest:
    return pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_TEXT,
        prompt=pb.Prompt(text=text),
        variant_count=1,
        models=[model],
        **fields,
    )


# -- item 10: keys bound to their source -------------------------------------------------


async def test_each_endpoint_gets_only_its_own_key(stack: Stack) -> None:
    # Each model with the environment's keys only, then with the request's own too.
    grpc_calls = [generation_events(stack.port, text_request(m)) for m in MODELS.values()]
    grpc_calls += [
        generation_events(stack.port, text_request(m, credentials=browser_credentials()))
        for m in MODELS.values()
    ]
    browser = {"openAiApiKey": BROWSER_KEYS["openai"], "anthropicApiKey": BROWSER_KEYS["anthropic"]}
    ws = stack.processes.ws_url
    ws_calls = [
        run_ws(ws, create_params(models=["local:qwen3"], **browser)),
        run_ws(ws, create_params(models=["local:qwen3"])),
    ]
    await asyncio.gather(*grpc_calls, *ws_calls)

    listeners = stack.listeners
    strays = {name: listeners[name].strays(allowed) for name, allowed in ALLOWED.items()}
    assert strays == dict.fromkeys(ALLOWED, 0)
    # Every endpoint was asked (so the count above means something), keyed ones with a
    # key of their own.
    asked = {name: len(listener.requests) for name, listener in listeners.items()}
    assert asked == {**dict.fromkeys(ALLOWED, 2), "local": 2 + 2 * 4}
    for name, allowed in ALLOWED.items():
        if allowed:
            assert all(any(k in text for k in allowed) for text in listeners[name].requests)


# -- item 11: look-alike paths ----------------------------------------------------------

LOOK_ALIKES = {
    "\uff0e\uff0e/x.html": "U+FF0E",  # fullwidth full stops: NFKC makes them ../
    "\u2024\u2024/x.html": "U+2024",  # one dot leaders: the same
    "\u0456ndex.html": "U+0456",  # a Cyrillic i
    "CON.html": "Windows device name",
    "lpt1/page.html": "Windows device name",
    "Index.html": "index.html",  # the other file, which it differs from only in case
}
PROJECT = {"index.html": "<p>home</p>", **dict.fromkeys(LOOK_ALIKES, "<p>x</p>")}


async def test_look_alike_paths_are_refused_over_websocket_grpc_and_export(stack: Stack) -> None:
    params = create_params(
        generationType="update",
        inputMode="text",
        prompt={"text": "Make it new", "images": [], "videos": []},
        files=PROJECT,
        models=["demo"],
    )
    refused = await run_ws(stack.processes.ws_url, params)
    assert refused.close_code == 4332
    [error] = refused.of("error")
    for i, (path, why) in enumerate(LOOK_ALIKES.items(), start=1):
        assert f"files[{i}].path" in error["value"], path
        assert why in error["value"], path
    assert refused.of("variantCount") == []

    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_UPDATE,
        input_mode=pb.INPUT_MODE_TEXT,
        prompt=pb.Prompt(text="Make it new"),
        models=["demo"],
        files=[common_pb2.FileState(path=p, content=c) for p, c in PROJECT.items()],
    )
    caught = await generation_refusal(stack.port, request)
    assert caught.code() == grpc.StatusCode.INVALID_ARGUMENT
    violations = bad_request_violations(caught)
    assert [v.field for v in violations] == [f"files[{i}].path" for i in range(1, 7)]
    for violation, why in zip(violations, LOOK_ALIKES.values(), strict=True):
        assert why in violation.description

    async with aiohttp.ClientSession() as session:
        for path, why in LOOK_ALIKES.items():
            files = {"index.html": "<p>home</p>", path: "<p>x</p>"}
            async with session.post(f"{stack.http}/api/export", json={"files": files}) as got:
                assert got.status == 400, path
                detail = (await got.json())["detail"]
                assert detail.startswith("files: "), detail
                assert why in detail, detail


async def test_look_alike_paths_from_the_model_are_tool_errors(stack: Stack) -> None:
    calls = [
        FunctionCall(f"call_{i}", "create_file", json.dumps({"path": p, "content": "<p>x</p>"}))
        for i, p in enumerate(LOOK_ALIKES)
    ]
    stack.script.add_chat(chat_turn(calls), chat_turn([Text(["Done."])]))
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_UPDATE,
        input_mode=pb.INPUT_MODE_TEXT,
        prompt=pb.Prompt(text="Add pages"),
        variant_count=1,
        models=["script:m"],
        files=[common_pb2.FileState(path="index.html", content="<p>home</p>")],
    )
    events = await generation_events(stack.port, request)

    results = [m for m in stack.script.requests[-1].json["messages"] if m["role"] == "tool"]
    assert len(results) == len(LOOK_ALIKES)
    for result, why in zip(results, LOOK_ALIKES.values(), strict=True):
        assert "create_file path must be a relative file name" in result["content"], result
        assert why in result["content"]
    written = {e.code_delta.path for e in events if e.HasField("code_delta")}
    assert written <= {"index.html"}


# -- item 12: generation ids -------------------------------------------------------------


async def test_a_client_chosen_id_never_overwrites_a_record(stack: Stack) -> None:
    chosen = "client-run-1"
    await generation_events(stack.port, text_request("demo", "A bakery", generation_id=chosen))
    # The next generation to finish retires the first from memory (S2C_RETAIN_GENERATIONS=1).
    await generation_events(stack.port, text_request("demo", "A florist"))

    again = await generation_refusal(
        stack.port, text_request("demo", "A butcher", generation_id=chosen)
    )
    assert again.code() == grpc.StatusCode.ALREADY_EXISTS
    assert again.details() == (
        "generation_id 'client-run-1' is taken: a generation of that id is on record. "
        "Leave generation_id empty and the agent mints one."
    )
    async with grpc.aio.insecure_channel(f"127.0.0.1:{stack.port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        record = await stub.GetGeneration(pb.GetGenerationRequest(generation_id=chosen))
    assert "bakery" in record.generation.variants[0].code
    assert "butcher" not in record.generation.variants[0].code


async def test_a_client_chosen_id_naming_another_agent_is_refused(stack: Stack) -> None:
    other = "other-agent-" + "0123456789abcdef" * 2
    caught = await generation_refusal(stack.port, text_request("demo", generation_id=other))
    assert caught.code() == grpc.StatusCode.INVALID_ARGUMENT
    [violation] = bad_request_violations(caught)
    assert violation.field == "generation_id"
    assert violation.description == (
        f"names agent 'other-agent', not this one ({AGENT!r}): a resume would look for it "
        "there. Leave generation_id empty and the agent mints one."
    )
    mine = f"{AGENT}-" + "fedcba9876543210" * 2
    events = await generation_events(stack.port, text_request("demo", generation_id=mine))
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
