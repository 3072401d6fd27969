"""How the two OpenAI sessions read a raw SSE body, whatever network reads it falls into.

The frames are the fake OpenAI server's (the real wire format); `SseWrites` decides
how they are written: a burst in one write, a record cut between two writes (the
second sent only after the client acted on the first), a body that ends or breaks in
the middle of a record, an error record in the middle of a burst.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from openai import AsyncOpenAI

from services.agent.providers import errors, registry
from services.agent.providers.base import (
    AssistantDelta,
    PromptMessage,
    ProviderError,
    ProviderName,
    ProviderSession,
    SessionConfig,
    ToolCallDelta,
    ToolSpec,
)
from services.agent.providers.openai_chat import OpenAIChatSession
from services.agent.providers.openai_responses import OpenAIResponsesSession
from services.agent.providers.streaming import MAX_MERGED_ARGUMENTS
from tests.fakes.openai_server import FunctionCall, Item, SseReply, Text, chat_turn, responses_turn
from tests.fakes.sse_writes import SseWrites, Step
from tests.providers.sessions import Recorder

KEY = "sk-test-DO-NOT-LEAK-91b2"
CREATE_FILE = ToolSpec("create_file", "Create a file", {"type": "object", "properties": {}})


@dataclass(frozen=True)
class Api:
    id: str
    provider: ProviderName
    session: Callable[[SessionConfig, AsyncOpenAI], ProviderSession]
    turn: Callable[..., SseReply]
    first_delta: int  # index of the first content frame of a turn
    ended_early: str
    error_detail: str  # what the user reads of an error record saying "Overloaded, key KEY"


APIS = [
    Api(
        "responses",
        registry.get("openai").name,
        lambda config, client: OpenAIResponsesSession(config, client=client),
        responses_turn,
        4,  # created, in_progress, output_item.added, content_part.added
        "the stream ended before the response completed",
        "Overloaded, key *** (server_error)",
    ),
    Api(
        "chat",
        registry.get("openai-compatible").name,
        lambda config, client: OpenAIChatSession(config, client=client),
        chat_turn,
        1,  # the chunk that opens the assistant message
        "the stream ended before the answer was complete",
        "Overloaded, key ***",
    ),
]


@pytest.fixture(params=APIS, ids=[a.id for a in APIS])
def api(request: pytest.FixtureRequest) -> Api:
    result: Api = request.param
    return result


Run = Callable[..., Any]


@pytest.fixture
async def run(api: Api) -> AsyncIterator[Run]:
    """`await run(steps, seen, end=…)`: one turn of `api` against a server writing `steps`."""
    servers: list[SseWrites] = []
    clients: list[AsyncOpenAI] = []

    async def one_turn(
        steps: Sequence[Step], seen: Recorder, end: Literal["eof", "abort"] = "eof"
    ) -> Any:
        server = SseWrites(steps, end=end)
        servers.append(server)
        base_url = f"{await server.start()}/v1"
        client = AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0)
        clients.append(client)
        config = SessionConfig(
            provider=api.provider,
            model_id="m",
            api_name="m",
            effort=None,
            api_key=KEY,
            base_url=base_url,
            messages=(PromptMessage("system", "s"), PromptMessage("user", "u")),
            tools=(CREATE_FILE,),
            max_retries=0,
        )
        return await api.session(config, client).stream_turn(seen)

    yield one_turn
    for client in clients:
        await client.close()
    for server in servers:
        await server.stop()


def frames(api: Api, items: Sequence[Item], **options: Any) -> list[bytes]:
    return [frame.encode() for frame in api.turn(items, **options).frames]


async def test_a_burst_in_one_read_is_one_event(api: Api, run: Run) -> None:
    words = [f"w{i} " for i in range(50)]
    body = frames(api, [Text(["start", *words])])
    head = api.first_delta + 1  # up to and with the first delta
    seen = Recorder()
    steps: list[Step] = [b"".join(body[:head]), seen.first.wait, b"".join(body[head:])]
    turn = await run(steps, seen)
    assert seen.events == [AssistantDelta("start"), AssistantDelta("".join(words))]
    assert turn.assistant_text == "start" + "".join(words)


async def test_a_burst_of_arguments_merges_within_the_replay_step(api: Api, run: Run) -> None:
    skeleton = json.dumps({"path": "index.html", "content": ""})
    arguments = json.dumps({"path": "index.html", "content": "x" * (1000 - len(skeleton))})
    assert len(arguments) == 1000
    seen = Recorder()
    body = frames(api, [FunctionCall("call_1", "create_file", arguments, pieces=100)])
    turn = await run([b"".join(body)], seen)
    assert all(isinstance(e, ToolCallDelta) and e.call_id == "call_1" for e in seen.events)
    pieces = [e.arguments_delta for e in seen.events if isinstance(e, ToolCallDelta)]
    assert "".join(pieces) == arguments
    # 100 fragments of 10 characters: merged up to the engine's replay step, no further.
    assert [len(p) for p in pieces] == [MAX_MERGED_ARGUMENTS] * math.ceil(1000 / 200)
    assert turn.tool_calls[0].arguments == json.loads(arguments)


async def test_a_record_split_between_reads(api: Api, run: Run) -> None:
    body = frames(api, [Text(["Hel", "lo"])])
    k = api.first_delta + 1  # the second delta's frame, cut in two
    half = len(body[k]) // 2
    seen = Recorder()
    steps: list[Step] = [
        b"".join(body[:k]) + body[k][:half],
        seen.first.wait,
        body[k][half:] + b"".join(body[k + 1 :]),
    ]
    turn = await run(steps, seen)
    assert seen.events == [AssistantDelta("Hel"), AssistantDelta("lo")]
    assert turn.assistant_text == "Hello"


@pytest.mark.parametrize("end", ["eof", "abort"])
async def test_a_stream_cut_in_a_record_fails_clearly(
    api: Api, run: Run, end: Literal["eof", "abort"]
) -> None:
    body = frames(api, [Text(["Hel", "lo"])])
    k = api.first_delta + 1
    seen = Recorder()
    with pytest.raises(ProviderError) as caught:
        await run([b"".join(body[:k]) + body[k][: len(body[k]) // 2]], seen, end)
    detail = api.ended_early if end == "eof" else "the connection was lost"
    assert caught.value.message == errors.stream_failed(api.provider, detail).message
    assert seen.events == [AssistantDelta("Hel")]


async def test_an_error_record_in_a_burst_ends_the_turn_after_what_came_before(
    api: Api, run: Run
) -> None:
    body = frames(api, [Text(["a", "b"])], end="error", error_message=f"Overloaded, key {KEY}")
    late_delta = body[api.first_delta]  # a record after the error, never to be forwarded
    seen = Recorder()
    with pytest.raises(ProviderError) as caught:
        await run([b"".join([*body, late_delta])], seen)
    assert caught.value.message == errors.stream_failed(api.provider, api.error_detail).message
    assert KEY not in caught.value.message
    assert seen.events == [AssistantDelta("ab")]


CHAT = next(a for a in APIS if a.id == "chat")


@pytest.mark.parametrize("api", [CHAT], ids=["chat"])  # only it ends with [DONE]
async def test_reading_stops_at_done_even_if_the_body_stays_open(api: Api, run: Run) -> None:
    body = frames(api, [Text(["Hi"])])
    assert body[-1] == b"data: [DONE]\n\n"
    held = asyncio.Event()
    seen = Recorder()
    turn = await run([b"".join(body), held.wait], seen)
    held.set()
    assert turn.assistant_text == "Hi"
