"""`/api/providers`: the credential sources the built-in UI renders its settings from."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from services.common.credentials import CREDENTIALS
from services.gateway.access import AccessSettings
from services.gateway.app import create_app
from services.gateway.settings import GatewaySettings

Client = TestClient[web.Request, web.Application]
TOKEN = "providers-route-token-0123"
# The UI unit tests (tests/ui/*.test.mjs) read this copy of the answer.
UI_FIXTURE = Path(__file__).resolve().parents[1] / "ui" / "providers.json"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    settings = GatewaySettings(data_dir=tmp_path, access=AccessSettings(token=TOKEN))
    async with TestClient(TestServer(create_app(settings))) as client:
        yield client


async def test_lists_every_credential_source_with_its_upstream_params(client: Client) -> None:
    response = await client.get("/api/providers", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status == 200
    body = await response.json()
    assert [p["id"] for p in body["providers"]] == [spec.id for spec in CREDENTIALS]
    by_id = {p["id"]: p for p in body["providers"]}
    # The names the upstream frontend sends, unchanged on the wire.
    assert by_id["openai"] == {
        "id": "openai",
        "displayName": "OpenAI",
        "keyParam": "openAiApiKey",
        "baseUrlParam": "openAiBaseURL",
        "models": True,
        "purpose": "",
    }
    assert by_id["anthropic"]["keyParam"] == "anthropicApiKey"
    assert by_id["anthropic"]["baseUrlParam"] is None
    assert by_id["gemini"]["keyParam"] == "geminiApiKey"
    assert by_id["replicate"]["keyParam"] == "replicateApiKey"
    assert by_id["replicate"]["models"] is False
    assert by_id["replicate"]["purpose"] == "image generation & editing"
    assert body == json.loads(UI_FIXTURE.read_text()), "refresh tests/ui/providers.json"


async def test_needs_the_gateway_token_like_every_api_route(client: Client) -> None:
    response = await client.get("/api/providers")
    assert response.status == 401
    assert "detail" in await response.json()
