"""The HTTP routes as the frontend calls them: export, screenshot, the route table."""

from __future__ import annotations

import base64
import io
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.common.vendor_urls import CDN_HOSTS
from services.gateway.access import AccessSettings, access_middleware
from services.gateway.design_systems import DesignSystemStore
from services.gateway.export import ExportPolicy
from services.gateway.limits import CaptureLimiter
from services.gateway.relay import rpc_error_text
from services.gateway.routes import (
    DESIGN_SYSTEMS_KEY,
    ApiError,
    add_routes,
    capture_error,
    normalize_screenshot_url,
)
from services.gateway.settings import GatewaySettings
from services.gateway.vendor_files import add_vendor_routes

Client = TestClient[web.Request, web.Application]

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    app = web.Application()
    add_routes(app, GatewaySettings(data_dir=tmp_path))
    async with TestClient(TestServer(app)) as client:
        yield client


def unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def save_asset(data_dir: Path, name: str) -> None:
    (data_dir / "assets").mkdir(exist_ok=True)
    (data_dir / "assets" / name).write_bytes(PNG)


# ---------------------------------------------------------------------------------------
# Screenshot


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("example.com", "https://example.com"),
        ("http://example.com", "http://example.com"),
        ("https://example.com", "https://example.com"),
        ("HTTPS://Example.com/A", "HTTPS://Example.com/A"),
        ("example.com/path/to/page", "https://example.com/path/to/page"),
        ("example.com/search?q=a:b&x=1", "https://example.com/search?q=a:b&x=1"),
        ("example.com:8080", "https://example.com:8080"),
        ("example.com:8080/path", "https://example.com:8080/path"),
        ("  example.com  \n", "https://example.com"),
        ("localhost", "https://localhost"),
        ("localhost:3000", "https://localhost:3000"),
        ("192.168.1.1", "https://192.168.1.1"),
        ("192.168.1.1:8080", "https://192.168.1.1:8080"),
        ("user:pass@example.com", "https://user:pass@example.com"),
        ("http://user:pass@example.com", "http://user:pass@example.com"),
        ("sub.domain.example.co.uk", "https://sub.domain.example.co.uk"),
    ],
)
def test_screenshot_urls_are_normalised_like_upstream(given: str, expected: str) -> None:
    assert normalize_screenshot_url(given) == expected


@pytest.mark.parametrize(
    ("given", "scheme"),
    [
        ("ftp://example.com", "ftp"),
        ("FILE:///etc/passwd", "file"),
        ("file:/etc/passwd", "file"),
        ("javascript:alert(1)", "javascript"),
        ("data:text/html,<b>x</b>", "data"),
    ],
)
def test_other_protocols_are_unsupported(given: str, scheme: str) -> None:
    with pytest.raises(ApiError, match=f"^Unsupported protocol: {scheme}$"):
        normalize_screenshot_url(given)


async def test_a_url_screenshot_without_an_agent_is_a_503(client: Client) -> None:
    # Captures are the tool workers' (tests/e2e/test_url_capture.py); here none is reachable.
    api_key = "so-secret-key-1234"
    response = await client.post("/api/screenshot", json={"url": "example.com", "apiKey": api_key})
    assert response.status == 503
    assert await response.json() == {"detail": "URL capture is unavailable: no agent is configured"}
    assert api_key not in await response.text()


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"url": "ftp://example.com", "apiKey": "k"}, "Unsupported protocol: ftp"),
        ({"url": "   ", "apiKey": "k"}, "URL is required"),
        ({"apiKey": "k"}, "url must be a string"),
        ({"url": 5}, "url must be a string"),
        ({"url": "example.com", "apiKey": 5}, "apiKey must be a string"),
        ({"url": "example.com", "device": "tablet"}, 'device must be "desktop" or "mobile"'),
        ({"url": "example.com", "device": ["mobile"]}, 'device must be "desktop" or "mobile"'),
        ({"url": "example.com", "format": "gif"}, 'format must be "png" or "jpeg"'),
        ({"url": "example.com", "format": {}}, 'format must be "png" or "jpeg"'),
        (["example.com"], "Request body must be a JSON object"),
    ],
)
async def test_screenshot_bodies_are_validated(client: Client, body: Any, detail: str) -> None:
    response = await client.post("/api/screenshot", json=body)
    assert response.status == 400
    assert await response.json() == {"detail": detail}


async def test_a_screenshot_body_that_is_not_json_is_a_400(client: Client) -> None:
    response = await client.post("/api/screenshot", data="url=example.com")
    assert response.status == 400
    assert (await response.json())["detail"].startswith("Request body is not valid JSON")


# ---------------------------------------------------------------------------------------
# Export


async def test_export_answers_a_zip(client: Client) -> None:
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    response = await client.post("/api/export", json={"code": f'<img src="{data_url}">'})
    assert response.status == 200
    assert response.content_type == "application/zip"
    assert response.headers["Content-Disposition"] == 'attachment; filename="export.zip"'
    files = unzip(await response.read())
    assert files == {"index.html": b'<img src="assets/image-1.png">', "assets/image-1.png": PNG}


async def test_export_bundles_local_assets_by_base_url(client: Client, tmp_path: Path) -> None:
    save_asset(tmp_path, "asset_0123abcd.png")
    base_url = f"http://127.0.0.1:{client.port}"
    code = '<img src="/local-assets/asset_0123abcd.png">'
    response = await client.post("/api/export", json={"code": code, "baseUrl": base_url})
    files = unzip(await response.read())
    assert files == {"index.html": b'<img src="assets/image-1.png">', "assets/image-1.png": PNG}


async def test_export_treats_the_forwarded_host_as_itself(client: Client, tmp_path: Path) -> None:
    # Behind a proxy or tunnel, asset URLs carry the public name; the bytes are still ours.
    save_asset(tmp_path, "asset_behind_proxy.png")
    code = (
        '<img src="https://s2c.example.com/local-assets/asset_behind_proxy.png">'
        '<img src="https://elsewhere.example.com/local-assets/asset_behind_proxy.png">'
    )
    response = await client.post(
        "/api/export",
        json={"code": code, "baseUrl": None},
        headers={"X-Forwarded-Host": "s2c.example.com, inner.proxy"},
    )
    files = unzip(await response.read())
    assert sorted(files) == ["assets/image-1.png", "index.html"]
    assert files["index.html"].decode() == (
        '<img src="assets/image-1.png">'
        '<img src="https://elsewhere.example.com/local-assets/asset_behind_proxy.png">'
    )


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({}, "code must be a string holding the page's HTML"),
        ({"code": 5}, "code must be a string holding the page's HTML"),
        ({"code": " \n "}, "There is no code to export"),
        ({"code": "<p>x</p>", "baseUrl": "ftp://example.com/"}, "baseUrl must be an absolute"),
        ({"code": "<p>x</p>", "baseUrl": "/relative/"}, "baseUrl must be an absolute"),
        ({"code": "<p>x</p>", "baseUrl": "http://[::1/"}, "baseUrl must be an absolute"),
        ({"code": "<p>x</p>", "baseUrl": 7}, "baseUrl must be an absolute"),
        ("<p>x</p>", "Request body must be a JSON object"),
        ({"code": "<p>x</p>", "files": {"a.html": "<p>a</p>"}}, "Give either code"),
        ({"files": {}}, "files must be a non-empty object"),
        ({"files": ["index.html"]}, "files must be a non-empty object"),
        ({"files": {"../up.html": "<p>x</p>"}}, 'files: "../up.html" is not a project path'),
        ({"files": {"run.php": "<p>x</p>"}}, 'files: "run.php" is not a project path'),
        ({"files": {"index.html": 3}}, 'files["index.html"] must be a string'),
        ({"files": {"index.html": " "}}, "There is no code to export"),
    ],
)
async def test_invalid_export_bodies_are_400(client: Client, body: Any, detail: str) -> None:
    response = await client.post("/api/export", json=body)
    assert response.status == 400
    assert (await response.json())["detail"].startswith(detail)


async def test_an_export_body_that_is_not_json_is_a_400(client: Client) -> None:
    response = await client.post("/api/export", data=b"\xff\xfe<html>")
    assert response.status == 400
    assert (await response.json())["detail"].startswith("Request body is not valid JSON")


async def test_an_export_over_the_body_limit_is_413(tmp_path: Path) -> None:
    app = web.Application()
    add_routes(app, GatewaySettings(data_dir=tmp_path, export=ExportPolicy(max_body_bytes=1000)))
    async with TestClient(TestServer(app)) as client:
        response = await client.post("/api/export", json={"code": "x" * 2000})
        assert response.status == 413
        assert "too large" in (await response.json())["detail"]


# ---------------------------------------------------------------------------------------
# The route table


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/design-systems", 200),
        ("POST", "/api/design-systems", 400),
        ("PATCH", "/api/design-systems/nope", 400),
        ("DELETE", "/api/design-systems/nope", 404),
        ("POST", "/api/export", 400),
        ("POST", "/api/screenshot", 400),
        ("GET", "/api/export", 405),
        ("GET", "/api/screenshot", 405),
        ("PUT", "/api/design-systems/nope", 405),
        ("DELETE", "/api/design-systems", 405),
    ],
)
async def test_every_route_answers_its_methods(
    client: Client, method: str, path: str, status: int
) -> None:
    response = await client.request(method, path, data=b"")
    assert response.status == status


async def test_the_store_is_reachable_from_the_app(tmp_path: Path) -> None:
    app = web.Application()
    add_routes(app, GatewaySettings(data_dir=tmp_path))
    store = app[DESIGN_SYSTEMS_KEY]
    assert isinstance(store, DesignSystemStore)
    assert store.path == tmp_path / "design-systems.json"


def _rpc_error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


EXCEPTION_TEXT = (
    "Unexpected <class 'PIL.Image.DecompressionBombError'>: Image size (480000000 pixels) "
    "exceeds limit of 178956970 pixels, could be decompression bomb DOS attack."
)


@pytest.mark.parametrize("code", [grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL])
def test_an_unexpected_capture_failure_carries_no_exception_text(code: grpc.StatusCode) -> None:
    error = capture_error(_rpc_error(code, EXCEPTION_TEXT))

    assert error.status == 502
    assert error.detail == f"URL capture failed ({code.name}); the server's log has the cause"
    assert "DecompressionBomb" not in rpc_error_text(_rpc_error(code, EXCEPTION_TEXT), "agent")


def test_a_documented_capture_verdict_keeps_its_words() -> None:
    error = capture_error(_rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "Capturing x timed out"))

    assert (error.status, error.detail) == (504, "Capturing x timed out")


def test_captures_are_bounded_per_client_then_in_all() -> None:
    limiter = CaptureLimiter(AccessSettings(capture_max_per_client=1, capture_max_running=2))

    assert limiter.try_start("a") is None
    mine = limiter.try_start("a")
    assert mine is not None
    assert (mine.status, mine.retry_after_s) == (429, 5)
    assert "from this client at once (limit 1)" in mine.message
    assert limiter.try_start("b") is None
    everyone = limiter.try_start("c")
    assert everyone is not None
    assert everyone.status == 503
    assert "busy with other URL captures (limit 2 at once)" in everyone.message
    limiter.finish("a")
    assert limiter.try_start("c") is None


# ---------------------------------------------------------------------------------------
# /vendor/ and the offline export


@pytest.fixture(scope="module")
def catalog() -> VendorCatalog:
    return VendorCatalog.load(DEFAULT_VENDOR_DIR)


@pytest.fixture
async def vendored(tmp_path: Path, catalog: VendorCatalog) -> AsyncIterator[Client]:
    # The token and origin list are on: /vendor/ is public and open to every origin, as
    # preview frames (an opaque origin, `Origin: null`) need it to be.
    access = AccessSettings(token="vendor-test-token-0123456789", allowed_origins=("http://ui",))
    app = web.Application(middlewares=[access_middleware(access)])
    add_routes(app, GatewaySettings(data_dir=tmp_path))
    add_vendor_routes(app, catalog)
    async with TestClient(TestServer(app)) as client:
        yield client


async def test_vendor_index_names_the_base_and_the_hosts(
    vendored: Client, catalog: VendorCatalog
) -> None:
    response = await vendored.get("/vendor/index.json", headers={"Origin": "null"})
    assert response.status == 200
    assert response.headers["Cache-Control"] == "no-cache"
    body = await response.json()
    assert body == {
        "available": True,
        "base": f"/vendor/{catalog.digest}/cdn/",
        "hosts": list(CDN_HOSTS),
    }


async def test_vendor_answers_a_cdn_url_from_the_local_copy(
    vendored: Client, catalog: VendorCatalog
) -> None:
    response = await vendored.get(
        f"/vendor/{catalog.digest}/cdn/cdn.tailwindcss.com", headers={"Origin": "null"}
    )
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert await response.read() == catalog.read("tailwindcss-cdn/tailwindcss.js").body
    # A Google Fonts stylesheet names font files under the same immutable path.
    css_url = f"/vendor/{catalog.digest}/cdn/fonts.googleapis.com/css2?family=Inter:wght@700"
    css = await (await vendored.get(css_url)).text()
    [font] = [u for u in css.split("url(")[1:] if "latin-wght" in u]
    font_url = font.split(")")[0]
    assert font_url.startswith(f"/vendor/{catalog.digest}/files/")
    fetched = await vendored.get(font_url)
    assert fetched.status == 200
    assert fetched.headers["Content-Type"] == "font/woff2"


async def test_vendor_sends_what_it_lacks_to_the_cdn_and_nothing_else_anywhere(
    vendored: Client, catalog: VendorCatalog
) -> None:
    base = f"/vendor/{catalog.digest}"
    lacking = await vendored.get(
        f"{base}/cdn/cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js", allow_redirects=False
    )
    assert lacking.status == 307
    assert (
        lacking.headers["Location"] == "https://cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js"
    )
    elsewhere = await vendored.get(f"{base}/cdn/evil.example/x.js", allow_redirects=False)
    assert elsewhere.status == 404  # never an open redirect
    stale = await vendored.get(
        "/vendor/0123456789abcdef/cdn/cdn.tailwindcss.com?plugins=forms", allow_redirects=False
    )
    assert stale.status == 307
    assert stale.headers["Location"] == f"{base}/cdn/cdn.tailwindcss.com?plugins=forms"
    missing = await vendored.get(f"{base}/files/react/package.json")
    assert missing.status == 404
    assert "detail" in await missing.json()


async def test_offline_export_bundles_the_runtimes(vendored: Client) -> None:
    headers = {"Authorization": "Bearer vendor-test-token-0123456789"}
    code = (
        '<link href="https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/css/bootstrap.min.css"'
        ' rel="stylesheet" integrity="sha384-x" crossorigin="anonymous">'
        '<script src="https://cdn.tailwindcss.com"></script>'
        '<link rel="stylesheet" href="https://cdnjs.cloudflare.com/ajax/libs/font-awesome/5.15.3/css/all.min.css">'
        '<script src="https://cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js"></script>'
    )
    response = await vendored.post(
        "/api/export", json={"code": code, "offline": True}, headers=headers
    )
    assert response.status == 200
    files = unzip(await response.read())
    page = files["index.html"].decode()
    assert page == (
        '<link href="./vendor/bootstrap/dist/css/bootstrap.min.css" rel="stylesheet">'
        '<script src="./vendor/tailwindcss-cdn/tailwindcss.js"></script>'
        '<link rel="stylesheet" href="./vendor/@fortawesome/fontawesome-free/css/all.min.css">'
        '<script src="https://cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js"></script>'
    )
    assert "vendor/@fortawesome/fontawesome-free/webfonts/fa-solid-900.woff2" in files
    # Without the option the page is exported as written; a wrong type is refused.
    plain = await vendored.post("/api/export", json={"code": code}, headers=headers)
    assert unzip(await plain.read()) == {"index.html": code.encode()}
    wrong = await vendored.post(
        "/api/export", json={"code": code, "offline": "yes"}, headers=headers
    )
    assert wrong.status == 400
    assert (await wrong.json())["detail"] == "offline must be true or false"


async def test_a_site_exported_offline_bundles_the_runtimes_of_every_page(
    vendored: Client,
) -> None:
    headers = {"Authorization": "Bearer vendor-test-token-0123456789"}
    tailwind = '<script src="https://cdn.tailwindcss.com"></script>'
    site = {
        "index.html": f'{tailwind}<a href="docs/faq.html">FAQ</a>',
        "docs/faq.html": f'{tailwind}<link rel="stylesheet" href="../site.css">',
        "site.css": "body { color: navy }",
    }
    response = await vendored.post(
        "/api/export", json={"files": site, "offline": True}, headers=headers
    )
    assert response.status == 200
    files = unzip(await response.read())
    assert files["index.html"].decode() == (
        '<script src="./vendor/tailwindcss-cdn/tailwindcss.js"></script>'
        '<a href="docs/faq.html">FAQ</a>'
    )
    # A page in a folder reaches the bundle one level up; its own links stay as written.
    assert files["docs/faq.html"].decode() == (
        '<script src="../vendor/tailwindcss-cdn/tailwindcss.js"></script>'
        '<link rel="stylesheet" href="../site.css">'
    )
    assert files["site.css"] == b"body { color: navy }"
    assert "vendor/tailwindcss-cdn/tailwindcss.js" in files


async def test_without_the_copies_the_preview_renders_as_written(tmp_path: Path) -> None:
    app = web.Application()
    add_routes(app, GatewaySettings(data_dir=tmp_path))
    add_vendor_routes(app, None)  # make install was not run: the services still start
    async with TestClient(TestServer(app)) as client:
        index = await client.get("/vendor/index.json")
        assert await index.json() == {"available": False, "hosts": []}
        cdn = await client.get("/vendor/x/cdn/cdn.tailwindcss.com")
        assert cdn.status == 404
        assert "make install" in (await cdn.json())["detail"]
        export = await client.post("/api/export", json={"code": "<p>x</p>", "offline": True})
        assert export.status == 503
        assert "not installed" in (await export.json())["detail"]
