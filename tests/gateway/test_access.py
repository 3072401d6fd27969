"""Gateway access control: token, origin allow-list, frame limit, per-client limits."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.access import (
    ORIGIN_REFUSED,
    TOKEN_REFUSED,
    AccessSettings,
    FrameLimitedWebSocketResponse,
    access_middleware,
    allowed_origin,
    normalize_origin,
)
from services.gateway.limits import ClientLimiter, client_identity
from services.gateway.relay import APP_ERROR

Client = TestClient[web.Request, web.Application]
MakeClient = Callable[[AccessSettings], Awaitable[Client]]

TOKEN = "gateway-token-123"
WRONG = "not-the-gateway-token"
UI = "https://ui.example.com"
SOCKETS_KEY: web.AppKey[list[str]] = web.AppKey("sockets")
SETTINGS_KEY = web.AppKey("settings", AccessSettings)


async def ok(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def whoami(request: web.Request) -> web.Response:
    return web.Response(text=client_identity(request, request.app[SETTINGS_KEY]))


async def cors_origin(request: web.Request) -> web.Response:
    return web.Response(text=repr(allowed_origin(request, request.app[SETTINGS_KEY])))


async def socket(request: web.Request) -> web.WebSocketResponse:
    """Echoes one text frame; records that the handler ran."""
    request.app[SOCKETS_KEY].append(request.path)
    ws = FrameLimitedWebSocketResponse(max_msg_size=request.app[SETTINGS_KEY].max_frame_bytes)
    await ws.prepare(request)
    message = await ws.receive()
    if message.type == WSMsgType.TEXT:
        await ws.send_str(message.data)
        await ws.close()
    return ws


@pytest.fixture
async def make_client() -> AsyncIterator[MakeClient]:
    clients: list[Client] = []

    async def make(settings: AccessSettings) -> Client:
        app = web.Application(middlewares=[access_middleware(settings)])
        app[SETTINGS_KEY] = settings
        app[SOCKETS_KEY] = []
        for path in ("/", "/healthz", "/metrics", "/api/capabilities", "/static/app.js"):
            app.router.add_get(path, ok)
        app.router.add_get("/local-assets/asset_0123.png", ok)
        app.router.add_post("/api/export", ok)
        app.router.add_get("/whoami", whoami)
        app.router.add_get("/cors", cors_origin)
        app.router.add_get("/generate-code", socket)
        client = TestClient(TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


async def refused(response: aiohttp.ClientResponse, status: int, detail: str) -> None:
    assert response.status == status
    body = await response.text()
    assert json.loads(body) == {"detail": detail}
    for text in (TOKEN, WRONG):
        assert text not in body
        assert all(text not in value for value in response.headers.values())


# ---------------------------------------------------------------------------------------
# Token


async def test_without_a_token_everything_is_open(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings())
    response = await client.get("/api/capabilities")
    assert response.status == 200
    assert "Referrer-Policy" not in response.headers


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({"Authorization": f"Bearer {TOKEN}"}, {}),
        ({"Authorization": f"bearer {TOKEN}"}, {}),
        ({}, {"token": TOKEN}),
        ({"Authorization": f"Bearer {WRONG}"}, {"token": TOKEN}),
    ],
)
async def test_token_accepted_in_header_or_query(
    make_client: MakeClient, headers: dict[str, str], query: dict[str, str]
) -> None:
    client = await make_client(AccessSettings(token=TOKEN))
    response = await client.post("/api/export", headers=headers, params=query)
    assert response.status == 200
    assert response.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({}, {}),
        ({"Authorization": f"Bearer {WRONG}"}, {}),
        ({"Authorization": f"Basic {TOKEN}"}, {}),
        ({"Authorization": TOKEN}, {}),
        ({}, {"token": WRONG}),
        ({}, {"token": TOKEN[:-1]}),
        ({}, {"access_token": TOKEN}),
    ],
)
async def test_missing_or_wrong_token_is_401(
    make_client: MakeClient, headers: dict[str, str], query: dict[str, str]
) -> None:
    client = await make_client(AccessSettings(token=TOKEN))
    response = await client.get("/api/capabilities", headers=headers, params=query)
    await refused(response, 401, TOKEN_REFUSED)
    assert response.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("path", "public"),
    [
        ("/", True),
        ("/healthz", True),
        ("/static/app.js", True),
        ("/local-assets/asset_0123.png", True),
        ("/metrics", False),
        ("/api/capabilities", False),
        ("/healthz/", False),
        ("/static", False),
    ],
)
async def test_public_paths_need_no_token(make_client: MakeClient, path: str, public: bool) -> None:
    client = await make_client(AccessSettings(token=TOKEN))
    response = await client.get(path)
    assert (response.status != 401) is public
    assert (response.status == 200) is (public and path not in ("/healthz/", "/static"))


async def test_preflight_needs_no_token(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(token=TOKEN))
    response = await client.options("/api/export", headers={"Origin": UI})
    assert response.status != 401


async def test_websocket_without_token_gets_an_error_frame(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(token=TOKEN))
    async with client.ws_connect("/generate-code", params={"token": WRONG}) as ws:
        message = await ws.receive()
        assert message.type == WSMsgType.TEXT
        assert json.loads(message.data) == {"type": "error", "value": TOKEN_REFUSED}
        assert (await ws.receive()).type == WSMsgType.CLOSE
    assert ws.close_code == APP_ERROR
    assert client.app is not None
    assert client.app[SOCKETS_KEY] == []


async def test_websocket_with_token_in_query_reaches_the_handler(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(token=TOKEN))
    async with client.ws_connect("/generate-code", params={"token": TOKEN}) as ws:
        await ws.send_str('{"hello": 1}')
        assert await ws.receive_str() == '{"hello": 1}'
    assert client.app is not None
    assert client.app[SOCKETS_KEY] == ["/generate-code"]


# ---------------------------------------------------------------------------------------
# Origins


async def test_listed_origin_passes_and_is_echoed(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(allowed_origins=(UI, "http://localhost:5173")))
    response = await client.get("/cors", headers={"Origin": UI})
    assert response.status == 200
    assert await response.text() == repr(UI)
    response = await client.get("/cors", headers={"Origin": "http://localhost:5173"})
    assert await response.text() == repr("http://localhost:5173")


async def test_unlisted_origin_is_403(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(allowed_origins=(UI,)))
    for origin in ("https://evil.example.com", "null", "http://ui.example.com", UI + ":8443"):
        response = await client.get("/api/capabilities", headers={"Origin": origin})
        await refused(response, 403, ORIGIN_REFUSED)


async def test_requests_without_origin_pass_the_allow_list(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(allowed_origins=(UI,)))
    assert (await client.get("/healthz")).status == 200
    assert await (await client.get("/cors")).text() == "None"


async def test_without_allow_list_every_origin_gets_a_star(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings())
    response = await client.get("/cors", headers={"Origin": "https://anything.example"})
    assert await response.text() == repr("*")


async def test_websocket_upgrade_from_unlisted_origin_is_refused(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(allowed_origins=(UI,)))
    with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
        await client.ws_connect("/generate-code", origin="https://evil.example.com")
    assert caught.value.status == 403
    async with client.ws_connect("/generate-code", origin=UI) as ws:
        await ws.send_str("x")
        assert await ws.receive_str() == "x"
    assert client.app is not None
    assert client.app[SOCKETS_KEY] == ["/generate-code"]


async def test_origin_is_checked_before_the_token(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(token=TOKEN, allowed_origins=(UI,)))
    response = await client.get(
        "/api/capabilities",
        headers={"Origin": "https://evil.example.com", "Authorization": f"Bearer {TOKEN}"},
    )
    await refused(response, 403, ORIGIN_REFUSED)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://UI.Example.com/", "https://ui.example.com"),
        ("https://ui.example.com:443", "https://ui.example.com"),
        ("http://localhost:80", "http://localhost"),
        ("http://localhost:5173", "http://localhost:5173"),
        ("http://[::1]:7001", "http://[::1]:7001"),
    ],
)
def test_origins_are_normalized(given: str, expected: str) -> None:
    assert normalize_origin(given) == expected
    assert AccessSettings(allowed_origins=(given,)).allowed_origins == (expected,)


@pytest.mark.parametrize(
    "bad", ["*", "null", "ui.example.com", "ftp://x", "https://x/path", "https://x?q=1"]
)
def test_bad_origins_fail_at_startup(bad: str) -> None:
    with pytest.raises(ValueError, match="S2C_ALLOWED_ORIGINS"):
        AccessSettings(allowed_origins=(bad,))


# ---------------------------------------------------------------------------------------
# Frame size


async def test_oversized_frame_gets_an_error_frame(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(max_frame_bytes=2 * 1024 * 1024))
    async with client.ws_connect("/generate-code") as ws:
        await ws.send_str("x" * (3 * 1024 * 1024))
        message = await ws.receive()
        assert message.type == WSMsgType.TEXT
        error = json.loads(message.data)
        assert error["type"] == "error"
        assert "limit is 2 MB" in error["value"]
        assert "S2C_MAX_FRAME_BYTES" in error["value"]
        assert (await ws.receive()).type == WSMsgType.CLOSE
    assert ws.close_code == APP_ERROR


async def test_frame_under_the_limit_passes(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(max_frame_bytes=2 * 1024 * 1024))
    async with client.ws_connect("/generate-code") as ws:
        await ws.send_str("y" * (1024 * 1024))
        assert len(await ws.receive_str()) == 1024 * 1024


# ---------------------------------------------------------------------------------------
# Client identity


async def test_identity_is_the_remote_address(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(token=TOKEN))
    response = await client.get(
        "/whoami",
        headers={"Authorization": f"Bearer {TOKEN}", "X-Forwarded-For": "203.0.113.9"},
    )
    identity = await response.text()
    assert identity == "127.0.0.1"
    assert TOKEN not in identity


async def test_identity_behind_a_trusted_proxy_is_the_last_hop(make_client: MakeClient) -> None:
    client = await make_client(AccessSettings(trust_proxy=True))
    response = await client.get("/whoami", headers={"X-Forwarded-For": "198.51.100.7, 203.0.113.9"})
    assert await response.text() == "203.0.113.9"
    response = await client.get("/whoami")
    assert await response.text() == "127.0.0.1"


# ---------------------------------------------------------------------------------------
# Limiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limiter(clock: FakeClock, **fields: Any) -> ClientLimiter:
    return ClientLimiter(AccessSettings(**fields), clock=clock)


def test_concurrent_generations_are_limited_per_client() -> None:
    limits = limiter(FakeClock(), max_concurrent_per_client=2, starts_per_minute=0)
    assert limits.try_start("a") is None
    assert limits.try_start("a") is None
    refusal = limits.try_start("a")
    assert refusal is not None
    assert refusal.message == (
        "Too many concurrent generations from this client (limit 2). Wait for one to finish."
    )
    assert refusal.retry_after_s is None
    assert limits.try_start("b") is None
    limits.finish("a")
    assert limits.held("a") == (0, 1)
    assert limits.try_start("a") is None
    assert limits.try_start("a") is not None


def test_starts_are_limited_over_a_sliding_minute() -> None:
    clock = FakeClock()
    limits = limiter(clock, max_concurrent_per_client=0, starts_per_minute=3)
    for offset in (0.0, 10.0, 20.0):
        clock.now = 1000.0 + offset
        assert limits.try_start("a") is None
        limits.finish("a")
    clock.now = 1030.0
    refusal = limits.try_start("a")
    assert refusal is not None
    assert refusal.message == (
        "Too many generation starts (limit 3 per minute). Try again in 30 s."
    )
    assert refusal.retry_after_s == 30
    assert limits.try_start("b") is None
    clock.now = 1059.5
    refusal = limits.try_start("a")
    assert refusal is not None
    assert refusal.retry_after_s == 1
    clock.now = 1060.0
    assert limits.try_start("a") is None
    assert limits.try_start("a") is not None


def test_refused_starts_do_not_count() -> None:
    clock = FakeClock()
    limits = limiter(clock, max_concurrent_per_client=1, starts_per_minute=2)
    assert limits.try_start("a") is None
    for _ in range(5):
        assert limits.try_start("a") is not None
    limits.finish("a")
    assert limits.try_start("a") is None


def test_zero_turns_limits_off() -> None:
    limits = limiter(FakeClock(), max_concurrent_per_client=0, starts_per_minute=0)
    assert all(limits.try_start("a") is None for _ in range(100))
    assert limits.held("a") == (0, 100)


def test_idle_clients_are_forgotten() -> None:
    clock = FakeClock()
    limits = limiter(clock)
    for client in ("a", "b", "c"):
        assert limits.try_start(client) is None
        limits.finish(client)
    assert limits.try_start("busy") is None
    assert limits.tracked_clients == 4
    clock.now += 61
    assert limits.try_start("d") is None
    assert limits.tracked_clients == 2
    assert limits.held("busy") == (0, 1)


def test_finish_without_start_is_harmless() -> None:
    limits = limiter(FakeClock(), max_concurrent_per_client=1)
    limits.finish("a")
    assert limits.try_start("a") is None
    assert limits.try_start("a") is not None


# ---------------------------------------------------------------------------------------
# Settings


def test_from_env() -> None:
    settings = AccessSettings.from_env(
        {
            "S2C_GATEWAY_TOKEN": TOKEN,
            "S2C_ALLOWED_ORIGINS": f"{UI}, http://localhost:5173 ,",
            "S2C_MAX_CONCURRENT_PER_CLIENT": "2",
            "S2C_STARTS_PER_MINUTE": "10",
            "S2C_MAX_FRAME_BYTES": "1048576",
            "S2C_TRUST_PROXY": "1",
        }
    )
    assert settings == AccessSettings(TOKEN, (UI, "http://localhost:5173"), 2, 10, 1048576, True)
    assert AccessSettings.from_env({}) == AccessSettings()


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"S2C_STARTS_PER_MINUTE": "many"}, "S2C_STARTS_PER_MINUTE must be an integer"),
        ({"S2C_MAX_CONCURRENT_PER_CLIENT": "-1"}, ">= 0"),
        ({"S2C_MAX_FRAME_BYTES": "0"}, "S2C_MAX_FRAME_BYTES"),
        ({"S2C_GATEWAY_TOKEN": "short"}, "S2C_GATEWAY_TOKEN"),
        ({"S2C_GATEWAY_TOKEN": "has spaces in it"}, "S2C_GATEWAY_TOKEN"),
    ],
)
def test_bad_env_fails_clearly(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ValueError, match=needle) as caught:
        AccessSettings.from_env(env)
    token = env.get("S2C_GATEWAY_TOKEN")
    if token:
        assert token not in str(caught.value)


def test_repr_redacts_the_token() -> None:
    text = repr(AccessSettings(token=TOKEN, allowed_origins=(UI,)))
    assert TOKEN not in text
    assert "<redacted>" in text
    assert UI in text


def test_sockets_waiting_for_params_are_capped_apart_from_generations() -> None:
    clock = FakeClock()
    gate = limiter(clock, max_concurrent_per_client=1, max_waiting_per_client=2)
    evicted: list[str] = []
    first = gate.wait("a", lambda: evicted.append("first"))
    second = gate.wait("a", lambda: evicted.append("second"))
    # At the limit the newcomer gets a place and the oldest waiting socket loses its own.
    third = gate.wait("a", lambda: evicted.append("third"))
    assert evicted == ["first"]
    assert gate.held("a") == (2, 0)
    gate.done_waiting(first)  # the evicted socket leaves: nothing more to give back
    assert gate.held("a") == (2, 0)
    # Waiting sockets hold no generation slot, and other clients are not affected.
    assert gate.try_start("a") is None
    gate.wait("b", lambda: evicted.append("b"))
    gate.done_waiting(second)
    gate.done_waiting(third)
    assert gate.held("a") == (0, 1)
    assert evicted == ["first"]
