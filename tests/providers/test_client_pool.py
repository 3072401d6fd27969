"""The agent's shared SDK clients (providers/clients.py): one per distinct credential."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from openai import AsyncOpenAI

from services.agent.domain import GenerationRequest
from services.agent.models import resolve
from services.agent.planning import Planner
from services.agent.pricing import Usage
from services.agent.providers.base import (
    ExecutedTool,
    OnEvent,
    PromptMessage,
    ProviderSession,
    ProviderTurn,
)
from services.agent.providers.clients import (
    ClientKind,
    ClientPool,
    PooledSession,
    forget_sdk_environment,
)
from services.agent.providers.factory import ProviderSessions, SessionRequest
from services.agent.providers.openai_responses import OpenAIResponsesSession
from services.agent.server import AgentServer
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from tests.fakes.openai_server import FakeOpenAI, Text, responses_turn
from tests.providers import sessions
from tests.providers.sessions import Recorder
from tests.providers.test_openai_responses import CREATE_FILE, KEY, config

MODEL = "gpt-5.4-mini (low thinking)"


fake = sessions.openai_fake


def _settings(key: str, base_url: str) -> AgentSettings:
    env = Credentials.of(openai=Endpoint(key, base_url))
    return AgentSettings(credentials=env, provider_max_retries=0)


def _session(sessions: ProviderSessions, key: str = KEY, base_url: str = "") -> PooledSession:
    request = GenerationRequest(generation_id="g-pool")
    if key != KEY or base_url:
        request = GenerationRequest(
            generation_id="g-pool", credentials=Credentials.of(openai=Endpoint(key, base_url))
        )
    session = sessions(
        SessionRequest(
            resolve(MODEL),
            variant_index=0,
            messages=config("").messages,
            tools=(CREATE_FILE,),
            request=request,
            credentials=Planner(sessions.settings).plan(request).credentials,
        )
    )
    assert isinstance(session, PooledSession)
    return session


def _client(session: PooledSession) -> AsyncOpenAI:
    inner = session.inner
    assert isinstance(inner, OpenAIResponsesSession)
    return inner._client


async def test_sessions_with_the_same_credentials_share_a_client_and_a_connection(
    fake: FakeOpenAI,
) -> None:
    fake.add_response(responses_turn([Text(["one"])]), responses_turn([Text(["two"])]))
    sessions = ProviderSessions(_settings(KEY, fake.base_url))
    first, second = _session(sessions), _session(sessions)
    assert _client(first) is _client(second)
    assert len(sessions.clients) == 1
    for session in (first, second):
        await session.stream_turn(Recorder())
    await first.close()
    await second.close()
    assert [r.json["model"] for r in fake.requests] == ["gpt-5.4-mini"] * 2
    # One TCP connection, kept alive from the first turn to the second.
    assert len({r.peer for r in fake.requests}) == 1
    assert fake.requests[0].peer is not None
    await sessions.aclose()


async def test_other_keys_and_base_urls_get_other_clients(fake: FakeOpenAI) -> None:
    sessions = ProviderSessions(_settings(KEY, fake.base_url))
    default = _session(sessions)
    other_key = _session(sessions, key="sk-other-key", base_url=fake.base_url)
    other_url = _session(sessions, base_url=fake.base_url + "/")
    clients = {id(_client(s)) for s in (default, other_key, other_url)}
    assert len(clients) == 3
    assert len(sessions.clients) == 3
    for session in (default, other_key, other_url):
        await session.close()
    await sessions.aclose()


async def test_shutdown_closes_every_client_idle_or_held(fake: FakeOpenAI) -> None:
    sessions = ProviderSessions(_settings(KEY, fake.base_url))
    held = _session(sessions)
    idle = _session(sessions, key="sk-other-key", base_url=fake.base_url)
    await idle.close()
    assert not _client(idle).is_closed()
    await sessions.aclose()
    assert _client(held).is_closed()
    assert _client(idle).is_closed()
    assert len(sessions.clients) == 0


class _Client:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = 0


class _Session:
    """A session that only records the client it was given."""

    def __init__(self, client: _Client) -> None:
        self.client = client
        self.closed = False

    async def stream_turn(self, on_event: OnEvent) -> ProviderTurn:
        return ProviderTurn("", [], Usage())

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        pass

    def append_user_turn(self, turn: ProviderTurn, message: PromptMessage) -> None:
        pass

    def total_cost_usd(self) -> float:
        return 0.0

    async def close(self) -> None:
        self.closed = True


async def _close(client: _Client) -> None:
    client.closed += 1


KIND = ClientKind("test", lambda c: _Client(c.api_key), _close)


def _pooled(pool: ClientPool, key: str) -> tuple[ProviderSession, _Client]:
    made: list[_Session] = []

    def make(client: _Client) -> ProviderSession:
        made.append(_Session(client))
        return made[-1]

    session = pool.session(config("http://127.0.0.1:9/v1", api_key=key), KIND, make)
    return session, made[0].client


async def test_eviction_closes_only_idle_clients_least_recent_first() -> None:
    pool = ClientPool(idle_cap=1)
    a, client_a = _pooled(pool, "a")
    b, client_b = _pooled(pool, "b")
    c, client_c = _pooled(pool, "c")
    await a.close()  # idle: a
    await b.close()  # idle: a, b → a, the least recent, goes
    assert (client_a.closed, client_b.closed, client_c.closed) == (1, 0, 0)
    again, client_b_again = _pooled(pool, "b")  # b back in use, out of the idle list
    assert client_b_again is client_b
    await c.close()  # idle: c only
    assert (client_b.closed, client_c.closed) == (0, 0)
    await again.close()  # idle: c, b → c goes; b, just used, stays
    assert (client_b.closed, client_c.closed) == (0, 1)
    await pool.aclose()
    assert (client_a.closed, client_b.closed, client_c.closed) == (1, 1, 1)


async def test_a_client_in_use_survives_any_number_of_evictions() -> None:
    pool = ClientPool(idle_cap=0)
    held, held_client = _pooled(pool, "held")
    second, _ = _pooled(pool, "held")
    await second.close()
    await second.close()  # a second close gives nothing back twice
    for n in range(5):
        other, other_client = _pooled(pool, f"other-{n}")
        await other.close()
        assert other_client.closed == 1
    assert held_client.closed == 0
    await held.close()
    assert held_client.closed == 1
    assert len(pool) == 0


async def test_a_session_that_fails_to_build_gives_its_client_back() -> None:
    pool = ClientPool(idle_cap=4)

    def refuse(client: _Client) -> ProviderSession:
        raise ValueError("no session")

    with pytest.raises(ValueError, match="no session"):
        pool.session(config("", api_key="k"), KIND, refuse)
    assert len(pool) == 1  # idle, for the next session of that key
    session, client = _pooled(pool, "k")
    await session.close()
    await pool.aclose()
    assert client.closed == 1
    assert len(pool) == 0


async def test_concurrent_sessions_on_one_fake_share_one_client(fake: FakeOpenAI) -> None:
    fake.add_response(*(responses_turn([Text([f"v{i}"])]) for i in range(4)))
    sessions = ProviderSessions(_settings(KEY, fake.base_url))
    variants = [_session(sessions) for _ in range(4)]
    turns = await asyncio.gather(*(v.stream_turn(Recorder()) for v in variants))
    assert sorted(t.assistant_text for t in turns) == ["v0", "v1", "v2", "v3"]
    assert len(sessions.clients) == 1
    for variant in variants:
        await variant.close()
    assert not _client(variants[0]).is_closed()
    await sessions.aclose()
    assert _client(variants[0]).is_closed()


async def test_the_agent_server_closes_its_clients_after_it_stopped(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    settings = replace(
        _settings(KEY, fake.base_url),
        listen="127.0.0.1:0",
        tools_addr="127.0.0.1:9",  # never called: no generation runs
        data_dir=tmp_path,
        metrics_listen="",
    )
    agent = AgentServer(settings)
    await agent.start()
    assert agent.providers is not None
    session = _session(agent.providers)
    client = _client(session)
    await session.close()
    assert not client.is_closed()  # idle, kept for the next session
    await agent.stop(grace_s=0.0)
    assert client.is_closed()


def test_the_agent_forgets_what_the_sdks_would_add_to_every_request() -> None:
    env = {"OPENAI_CUSTOM_HEADERS": "X-Auth: s", "OPENAI_API_KEY": "k", "ANTHROPIC_AUTH_TOKEN": "t"}
    assert forget_sdk_environment(env) == ["OPENAI_CUSTOM_HEADERS", "ANTHROPIC_AUTH_TOKEN"]
    # The agent's own settings read the key before; only the SDKs' ambient extras go.
    assert env == {"OPENAI_API_KEY": "k"}
