"""Design systems CRUD over HTTP, persisted to `data_dir/design-systems.json`."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.design_systems import MAX_CONTENT_BYTES, MAX_NAME_CHARS
from services.gateway.routes import add_routes
from services.gateway.settings import GatewaySettings

Client = TestClient[web.Request, web.Application]


class StepClock:
    """Each reading is one second after the previous one, so updates are visible."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


async def start(data_dir: Path, clock: StepClock | None = None) -> Client:
    app = web.Application()
    add_routes(app, GatewaySettings(data_dir=data_dir), clock=clock)
    client: Client = TestClient(TestServer(app))
    await client.start_server()
    return client


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    client = await start(tmp_path)
    yield client
    await client.close()


async def create(client: Client, name: str = "Brand", content: str = "Use blue.") -> Any:
    response = await client.post("/api/design-systems", json={"name": name, "content": content})
    assert response.status == 200, await response.text()
    return await response.json()


async def listed(client: Client) -> Any:
    response = await client.get("/api/design-systems")
    assert response.status == 200
    return await response.json()


def stored(data_dir: Path) -> Any:
    return json.loads((data_dir / "design-systems.json").read_text(encoding="utf-8"))


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_an_empty_store_lists_nothing(client: Client, tmp_path: Path) -> None:
    assert await listed(client) == []
    assert not (tmp_path / "design-systems.json").exists()


async def test_create_returns_the_system_and_persists_it(client: Client, tmp_path: Path) -> None:
    created = await create(client, "  Acme  ", "Primary #0055ff\nRounded corners.")
    assert set(created) == {"id", "name", "content", "createdAt", "updatedAt"}
    assert uuid.UUID(created["id"]).version == 4
    assert created["name"] == "Acme"
    assert created["content"] == "Primary #0055ff\nRounded corners."
    created_at = datetime.fromisoformat(created["createdAt"])
    assert created_at.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - created_at) < timedelta(minutes=5)
    assert created["updatedAt"] == created["createdAt"]
    assert await listed(client) == [created]
    assert stored(tmp_path) == [created]


async def test_systems_are_listed_in_creation_order(client: Client) -> None:
    first = await create(client, "One")
    second = await create(client, "Two")
    assert [s["id"] for s in await listed(client)] == [first["id"], second["id"]]


async def test_content_may_be_omitted(client: Client) -> None:
    response = await client.post("/api/design-systems", json={"name": "Empty"})
    assert response.status == 200
    assert (await response.json())["content"] == ""


@pytest.mark.parametrize(
    "body", [{"name": ""}, {"name": "   \n"}, {"content": "x"}, {"name": None}]
)
async def test_a_blank_name_is_refused(client: Client, body: dict[str, Any]) -> None:
    response = await client.post("/api/design-systems", json=body)
    assert response.status == 400
    assert await response.json() == {"detail": "Design system name is required"}
    assert await listed(client) == []


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        ("{not json", "Request body is not valid JSON"),
        ("[1, 2]", "Request body must be a JSON object"),
        ('"Acme"', "Request body must be a JSON object"),
        ('{"name": 5}', "Design system name must be a string"),
        ('{"name": "A", "content": ["x"]}', "Design system content must be a string"),
        (
            json.dumps({"name": "n" * (MAX_NAME_CHARS + 1)}),
            f"Design system name is too long: {MAX_NAME_CHARS + 1} characters (max 200)",
        ),
        (
            json.dumps({"name": "A", "content": "é" * (MAX_CONTENT_BYTES // 2 + 1)}),
            f"Design system content is too large: {MAX_CONTENT_BYTES + 2} bytes",
        ),
    ],
)
async def test_invalid_create_bodies_say_what_is_wrong(
    client: Client, raw: str, detail: str
) -> None:
    response = await client.post(
        "/api/design-systems", data=raw, headers={"Content-Type": "application/json"}
    )
    assert response.status == 400
    assert (await response.json())["detail"].startswith(detail)
    assert await listed(client) == []


async def test_the_limits_themselves_are_allowed(client: Client) -> None:
    created = await create(client, "n" * MAX_NAME_CHARS, "c" * MAX_CONTENT_BYTES)
    assert len(created["content"]) == MAX_CONTENT_BYTES


async def test_an_oversized_body_is_refused_before_parsing(client: Client) -> None:
    response = await client.post(
        "/api/design-systems",
        data=b"{" + b" " * (3 * 1024 * 1024) + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 413
    assert "too large" in (await response.json())["detail"]


async def test_patch_changes_only_the_given_fields(tmp_path: Path) -> None:
    clock = StepClock()
    client = await start(tmp_path, clock)
    try:
        created = await create(client, "Acme", "old")
        response = await client.patch(
            f"/api/design-systems/{created['id']}", json={"content": "new", "name": None}
        )
        assert response.status == 200
        updated = await response.json()
        assert updated["name"] == "Acme"
        assert updated["content"] == "new"
        assert updated["createdAt"] == created["createdAt"]
        assert updated["updatedAt"] == "2025-01-01T12:00:02+00:00"
        response = await client.patch(
            f"/api/design-systems/{created['id']}", json={"name": " Renamed "}
        )
        renamed = await response.json()
        assert (renamed["name"], renamed["content"]) == ("Renamed", "new")
        assert await listed(client) == [renamed]
        assert stored(tmp_path) == [renamed]
    finally:
        await client.close()


async def test_patch_validates_like_create(client: Client) -> None:
    created = await create(client)
    for body, detail in [
        ({"name": "  "}, "Design system name is required"),
        ({"content": 3}, "Design system content must be a string"),
        ([], "Request body must be a JSON object"),
    ]:
        response = await client.patch(f"/api/design-systems/{created['id']}", json=body)
        assert response.status == 400
        assert await response.json() == {"detail": detail}
    assert await listed(client) == [created]


async def test_unknown_ids_are_not_found(client: Client) -> None:
    await create(client)
    missing = f"/api/design-systems/{uuid.uuid4()}"
    response = await client.patch(missing, json={"name": "x"})
    assert response.status == 404
    assert await response.json() == {"detail": "Design system not found"}
    response = await client.delete(missing)
    assert response.status == 404
    assert await response.json() == {"detail": "Design system not found"}


async def test_delete_removes_the_system(client: Client, tmp_path: Path) -> None:
    keep = await create(client, "Keep")
    drop = await create(client, "Drop")
    response = await client.delete(f"/api/design-systems/{drop['id']}")
    assert response.status == 204
    assert await response.read() == b""
    assert await listed(client) == [keep]
    assert stored(tmp_path) == [keep]
    assert (await client.delete(f"/api/design-systems/{drop['id']}")).status == 404


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "is not valid JSON"),
        ('{"systems": []}', "does not hold a JSON list"),
        ('[{"id": 1, "name": "x"}]', "entry 0 is not a design system"),
        ("\udcff", "cannot be read"),
    ],
)
async def test_a_corrupt_file_is_a_clear_500_and_is_never_overwritten(
    client: Client, tmp_path: Path, text: str, reason: str
) -> None:
    path = tmp_path / "design-systems.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    before = path.read_bytes()
    response = await client.get("/api/design-systems")
    assert response.status == 500
    detail = (await response.json())["detail"]
    assert str(path) in detail
    assert reason in detail
    assert "fix or remove it" in detail
    response = await client.post("/api/design-systems", json={"name": "New"})
    assert response.status == 500
    assert path.read_bytes() == before


async def test_concurrent_requests_never_lose_an_update(client: Client, tmp_path: Path) -> None:
    names = [f"System {i}" for i in range(60)]
    created = await asyncio.gather(*(create(client, name, name) for name in names))
    assert len({c["id"] for c in created}) == len(names)
    assert sorted(s["name"] for s in await listed(client)) == sorted(names)
    # Mixed writers: half deleted while the other half is renamed, all at once.
    responses = await asyncio.gather(
        *(
            client.delete(f"/api/design-systems/{c['id']}")
            if i % 2
            else client.patch(f"/api/design-systems/{c['id']}", json={"name": f"R{i}"})
            for i, c in enumerate(created)
        )
    )
    assert [r.status for r in responses] == [200 if i % 2 == 0 else 204 for i in range(60)]
    expected = sorted(f"R{i}" for i in range(0, 60, 2))
    assert sorted(s["name"] for s in await listed(client)) == expected
    assert sorted(s["name"] for s in stored(tmp_path)) == expected
    assert files_in(tmp_path) == ["design-systems.json"]  # no temporary file left behind


async def test_systems_survive_a_restart(tmp_path: Path) -> None:
    first = await start(tmp_path)
    try:
        created = await create(first, "Persisted", "content")
    finally:
        await first.close()
    second = await start(tmp_path)
    try:
        assert await listed(second) == [created]
    finally:
        await second.close()


async def test_the_data_dir_is_created_on_first_write(tmp_path: Path) -> None:
    client = await start(tmp_path / "nested" / "data")
    try:
        created = await create(client)
        assert stored(tmp_path / "nested" / "data") == [created]
    finally:
        await client.close()
