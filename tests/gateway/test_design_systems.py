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

from services.gateway.access import AccessSettings
from services.gateway.app import create_app
from services.gateway.design_systems import (
    MAX_CONTENT_BYTES,
    MAX_NAME_CHARS,
    DesignSystemLimits,
)
from services.gateway.routes import DESIGN_SYSTEMS_KEY, add_routes
from services.gateway.settings import GatewaySettings

Client = TestClient[web.Request, web.Application]


class StepClock:
    """Each reading is one second after the previous one, so updates are visible."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


async def start(
    data_dir: Path, clock: StepClock | None = None, limits: DesignSystemLimits | None = None
) -> Client:
    app = web.Application()
    settings = GatewaySettings(data_dir=data_dir, design_systems=limits or DesignSystemLimits())
    add_routes(app, settings, clock=clock)
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
    ("raw", "status", "detail"),
    [
        ("{not json", 400, "Request body is not valid JSON"),
        ("[1, 2]", 400, "Request body must be a JSON object"),
        ('"Acme"', 400, "Request body must be a JSON object"),
        ('{"name": 5}', 400, "Design system name must be a string"),
        ('{"name": ["A"]}', 400, "Design system name must be a string"),
        ('{"name": "A", "content": ["x"]}', 400, "Design system content must be a string"),
        ('{"name": "A", "content": 7}', 400, "Design system content must be a string"),
        (
            json.dumps({"name": "n" * (MAX_NAME_CHARS + 1)}),
            400,
            f"Design system name is too long: {MAX_NAME_CHARS + 1} characters (max 200)",
        ),
        (
            json.dumps({"name": "n" * 100_000}),
            400,
            "Design system name is too long: 100000 characters (max 200)",
        ),
        (
            json.dumps({"name": "A", "content": "é" * (MAX_CONTENT_BYTES // 2 + 1)}),
            413,
            f"Design system content is too large: {MAX_CONTENT_BYTES + 2} bytes",
        ),
        # JSON escapes decode to lone surrogates, which no file or response can carry.
        (
            '{"name": "Bad \\ud800 name"}',
            400,
            "Design system name contains a lone surrogate (U+D800 at character 4)",
        ),
        (
            '{"name": "A", "content": "ok \\udfff"}',
            400,
            "Design system content contains a lone surrogate (U+DFFF at character 3)",
        ),
    ],
)
async def test_invalid_create_bodies_say_what_is_wrong(
    client: Client, raw: str, status: int, detail: str
) -> None:
    response = await client.post(
        "/api/design-systems", data=raw, headers={"Content-Type": "application/json"}
    )
    assert response.status == status
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
    response = await client.patch(
        f"/api/design-systems/{created['id']}",
        data='{"name": "\\udbff"}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 400
    assert "lone surrogate (U+DBFF" in (await response.json())["detail"]
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


async def test_the_count_is_bounded(tmp_path: Path) -> None:
    client = await start(tmp_path, limits=DesignSystemLimits(max_count=3))
    try:
        created = [await create(client, f"S{i}") for i in range(3)]
        response = await client.post("/api/design-systems", json={"name": "One too many"})
        assert response.status == 413
        assert await response.json() == {
            "detail": "Too many design systems: 3 stored (max 3); delete one first"
        }
        assert len(stored(tmp_path)) == 3
        await client.delete(f"/api/design-systems/{created[0]['id']}")
        await create(client, "Fits again")
    finally:
        await client.close()


async def test_the_total_size_is_bounded_for_creates_and_growing_patches(
    tmp_path: Path,
) -> None:
    # Size = UTF-8 bytes of name + content: "A" + 400 = 401 per system.
    limits = DesignSystemLimits(max_content_bytes=500, max_total_bytes=900)
    client = await start(tmp_path, limits=limits)
    try:
        first = await create(client, "A", "x" * 400)
        second = await create(client, "B", "y" * 400)
        response = await client.post(
            "/api/design-systems", json={"name": "C", "content": "z" * 400}
        )
        assert response.status == 413
        assert await response.json() == {
            "detail": "Design systems would take 1203 bytes in total (max 900 bytes); "
            "delete or shorten one first"
        }
        grow = await client.patch(f"/api/design-systems/{first['id']}", json={"content": "x" * 499})
        assert grow.status == 413
        shrink = await client.patch(f"/api/design-systems/{first['id']}", json={"content": "x"})
        assert shrink.status == 200
        await create(client, "C", "z" * 400)
        assert [s["name"] for s in await listed(client)] == ["A", "B", "C"]
        assert stored(tmp_path)[1] == second
        too_big = await client.post("/api/design-systems", json={"name": "D", "content": "w" * 501})
        assert too_big.status == 413
        assert "content is too large: 501 bytes (max 500 bytes)" in (await too_big.json())["detail"]
    finally:
        await client.close()


async def test_a_file_over_a_lowered_limit_can_still_be_cut_down(tmp_path: Path) -> None:
    first = await start(tmp_path)
    try:
        big = await create(first, "Big", "b" * 2000)
    finally:
        await first.close()
    client = await start(tmp_path, limits=DesignSystemLimits(max_total_bytes=1000))
    try:
        assert await listed(client) == [big]
        response = await client.post("/api/design-systems", json={"name": "New"})
        assert response.status == 413
        cut = await client.patch(f"/api/design-systems/{big['id']}", json={"content": "b" * 900})
        assert cut.status == 200
        await create(client, "New")
    finally:
        await client.close()


async def test_the_body_limit_follows_the_content_limit(tmp_path: Path) -> None:
    limits = DesignSystemLimits(max_content_bytes=1000)
    client = await start(tmp_path, limits=limits)
    try:
        # Every character escaped (\\u0001 is six bytes): the largest valid body fits.
        body = json.dumps({"name": "N", "content": "\x01" * 1000})
        assert len(body) <= limits.max_body_bytes
        assert (await client.post("/api/design-systems", data=body)).status == 200
        response = await client.post("/api/design-systems", data=b" " * (limits.max_body_bytes + 1))
        assert response.status == 413
        assert (await response.json())["detail"].startswith("Request body is too large")
    finally:
        await client.close()


async def test_an_edit_made_outside_the_gateway_is_seen(client: Client, tmp_path: Path) -> None:
    created = await create(client, "Before")
    assert await listed(client) == [created]
    edited = {**created, "name": "Edited by hand", "content": "a longer content than before"}
    (tmp_path / "design-systems.json").write_text(json.dumps([edited]), encoding="utf-8")
    assert await listed(client) == [edited]


def test_limits_come_from_the_environment() -> None:
    settings = GatewaySettings.from_env(
        {
            "S2C_DESIGN_SYSTEMS_MAX_COUNT": "7",
            "S2C_DESIGN_SYSTEM_MAX_BYTES": "1234",
            "S2C_DESIGN_SYSTEMS_MAX_TOTAL_BYTES": "5678",
        }
    )
    assert settings.design_systems == DesignSystemLimits(7, 1234, 5678)
    assert GatewaySettings.from_env({}).design_systems == DesignSystemLimits(
        100, 200 * 1024, 4 * 1024 * 1024
    )


async def test_an_unusable_data_dir_is_a_clear_503_and_healthz_says_degraded(
    tmp_path: Path,
) -> None:
    # Root ignores permission bits, so "read-only" is staged as something no user can
    # write through: the data directory replaced by a regular file (ENOTDIR/EEXIST).
    data_dir = tmp_path / "data"
    app = create_app(GatewaySettings(data_dir=data_dir))
    client: Client = TestClient(TestServer(app))
    await client.start_server()
    try:
        created = await create(client, "Kept")
        # (No agent runs here, so the status is "degraded" throughout: the storage says why.)
        assert (await (await client.get("/api/health")).json())["storage"] == {
            "design_systems": {"ok": True}
        }
        data_dir.rename(tmp_path / "moved")
        data_dir.write_text("not a directory")

        response = await client.post("/api/design-systems", json={"name": "Lost"})
        assert response.status == 503
        detail = (await response.json())["detail"]
        assert detail.startswith("The design systems file")
        assert "cannot be read: NotADirectoryError" in detail
        for request in (
            client.patch(f"/api/design-systems/{created['id']}", json={"name": "x"}),
            client.delete(f"/api/design-systems/{created['id']}"),
            client.get("/api/design-systems"),
        ):
            response = await request
            assert response.status == 503
            assert "NotADirectoryError" in (await response.json())["detail"]

        health = await (await client.get("/api/health")).json()
        assert health["status"] == "degraded"
        assert await (await client.get("/healthz")).json() == {"status": "degraded"}
        store = health["storage"]["design_systems"]
        assert store["ok"] is False
        assert store["op"] == "read"
        assert "NotADirectoryError" in store["error"]
        metrics = await (await client.get("/metrics")).text()
        assert 's2c_storage_healthy{store="design_systems"} 0.0' in metrics
        assert 's2c_storage_errors_total{op="read",store="design_systems"}' in metrics

        # Recovery: the directory is back; the next health probe finds it writable.
        data_dir.unlink()
        (tmp_path / "moved").rename(data_dir)
        health = await (await client.get("/api/health")).json()
        assert health["storage"] == {"design_systems": {"ok": True}}
        metrics = await (await client.get("/metrics")).text()
        assert 's2c_storage_healthy{store="design_systems"} 1.0' in metrics
        assert [s["name"] for s in await listed(client)] == ["Kept"]
    finally:
        await client.close()


async def test_with_a_token_public_healthz_says_only_its_status(tmp_path: Path) -> None:
    # Issue 35: /healthz carried the tool list and the unavailable reasons (a browser's
    # launch error, a store's error and path) that the token protects on other routes.
    token = "healthz-test-token-0123456789"
    settings = GatewaySettings(data_dir=tmp_path, access=AccessSettings(token=token))
    client: Client = TestClient(TestServer(create_app(settings)))
    await client.start_server()
    try:
        # No agent runs here: "degraded", and the detail says why.
        public = await client.get("/healthz")
        refused = await client.get("/api/health")
        detail = await client.get("/api/health", headers={"Authorization": f"Bearer {token}"})

        assert public.status == 200
        assert await public.json() == {"status": "degraded"}
        assert refused.status == 401
        health = await detail.json()
        assert health["status"] == "degraded"
        assert health["storage"] == {"design_systems": {"ok": True}}
        assert health["capabilities"]["error"] == "agent unavailable"
    finally:
        await client.close()


async def test_a_store_file_that_is_a_directory_is_a_503_that_says_why(tmp_path: Path) -> None:
    # A write refused while reads work is reproduced against a running gateway in
    # tests/e2e/test_storage_failures.py (a file-size limit on the process).
    data_dir = tmp_path / "data"
    client = await start(data_dir)
    try:
        await create(client, "Kept")
        store = client.app[DESIGN_SYSTEMS_KEY]
        stored_file = data_dir / "design-systems.json"
        stored_file.unlink()
        stored_file.mkdir()
        (stored_file / "blocker").write_text("x")
        response = await client.post("/api/design-systems", json={"name": "Lost"})
        assert response.status == 503
        detail = (await response.json())["detail"]
        assert "cannot be read: IsADirectoryError" in detail
        assert not store.health.ok
    finally:
        await client.close()
