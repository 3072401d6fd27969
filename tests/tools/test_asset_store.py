"""The asset store: content addressing, staging and promotion, limits, local-URL inlining."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.common.input_images import InputImage
from services.common.uploads import MAX_ASSET_BYTES, DecodedImage, upload_id
from services.tools.asset_store import AssetStore, LocalDirBackend
from services.tools.save_assets import stage_uploads

PNG = b"\x89PNG\r\n\x1a\n" + b"fake png body"
JPEG = b"\xff\xd8\xff\xe0" + b"fake jpeg body"
BASE = "http://127.0.0.1:7001"


def upload(data: bytes, content_type: str = "image/png") -> DecodedImage:
    return DecodedImage(content_type, data)


def data_url(data: bytes, content_type: str = "image/png") -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode()}"


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


class SpyBackend(LocalDirBackend):
    """The local backend, recording every key read or probed."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.touched: list[tuple[str, str]] = []

    async def read(self, area: str, name: str) -> bytes | None:
        self.touched.append((area, name))
        return await super().read(area, name)

    async def exists(self, area: str, name: str) -> bool:
        self.touched.append((area, name))
        return await super().exists(area, name)


class MemoryBackend:
    """An in-memory stand-in for an object store: nothing on local disk."""

    def __init__(self) -> None:
        self.blobs: dict[tuple[str, str], bytes] = {}

    async def write(self, area: str, name: str, data: bytes) -> None:
        self.blobs[area, name] = data

    async def read(self, area: str, name: str) -> bytes | None:
        return self.blobs.get((area, name))

    async def exists(self, area: str, name: str) -> bool:
        return (area, name) in self.blobs

    def local_path(self, area: str, name: str) -> Path | None:
        return None


@pytest.fixture
def store(tmp_path: Path) -> AssetStore:
    return AssetStore(tmp_path)


# -- put / read / path_of ----------------------------------------------------------------


async def test_put_is_content_addressed_and_dedupes(store: AssetStore, tmp_path: Path) -> None:
    first = await store.put(PNG, "image/png")
    second = await store.put(PNG, "image/png")
    digest = hashlib.sha256(PNG).hexdigest()[:24]
    assert first == second
    assert first.name == f"asset_{digest}.png"
    assert (first.content_type, first.size) == ("image/png", len(PNG))
    assert files_in(tmp_path / "assets") == [first.name]
    assert await store.read(first.name) == PNG


async def test_jpeg_gets_the_jpg_extension(store: AssetStore) -> None:
    stored = await store.put(JPEG, "image/jpeg")
    assert stored.name.endswith(".jpg")
    assert store.content_type_of(stored.name) == "image/jpeg"


@pytest.mark.parametrize(
    ("data", "content_type"),
    [
        (PNG, "image/svg+xml"),
        (PNG, "text/html"),
        (b"", "image/png"),
        (b"x" * (MAX_ASSET_BYTES + 1), "image/png"),
    ],
)
async def test_put_refuses_other_types_and_sizes(
    store: AssetStore, tmp_path: Path, data: bytes, content_type: str
) -> None:
    with pytest.raises(ValueError, match="asset"):
        await store.put(data, content_type)
    assert files_in(tmp_path / "assets") == []


async def test_concurrent_puts_leave_one_file_and_no_temporaries(
    store: AssetStore, tmp_path: Path
) -> None:
    results = await asyncio.gather(*(store.put(PNG, "image/png") for _ in range(10)))
    assert len({r.name for r in results}) == 1
    assert files_in(tmp_path / "assets") == [results[0].name]


async def test_path_of_only_for_existing_valid_names(store: AssetStore, tmp_path: Path) -> None:
    stored = await store.put(PNG, "image/png")
    assert await store.path_of(stored.name) == tmp_path / "assets" / stored.name
    missing = "asset_" + "0" * 24 + ".png"
    assert await store.path_of(missing) is None


@pytest.mark.parametrize(
    "name",
    [
        "../uploads/x.png",
        "..",
        "/etc/passwd",
        "asset_" + "a" * 24 + ".svg",
        "asset_" + "A" * 24 + ".png",
        "asset_" + "a" * 23 + ".png",
        "asset_" + "a" * 24 + ".png/../../secret",
        "tmp_asset_" + "a" * 24 + ".png",
        "",
    ],
)
async def test_bad_names_never_reach_storage(tmp_path: Path, name: str) -> None:
    spy = SpyBackend(tmp_path)
    store = AssetStore(spy)
    assert await store.path_of(name) is None
    assert await store.read(name) is None
    assert store.content_type_of(name) is None
    assert spy.touched == []


def test_public_url() -> None:
    name = "asset_" + "b" * 24 + ".png"
    assert AssetStore.public_url(name, BASE) == f"{BASE}/local-assets/{name}"
    assert AssetStore.public_url(name, BASE + "/") == f"{BASE}/local-assets/{name}"


def test_local_backend_refuses_traversal_keys(tmp_path: Path) -> None:
    backend = LocalDirBackend(tmp_path)
    with pytest.raises(ValueError, match="invalid blob key"):
        backend.local_path("assets", "../x")
    with pytest.raises(ValueError, match="invalid blob key"):
        backend.local_path("..", "x")


# -- staging and promotion ----------------------------------------------------------------


async def test_stage_upload_writes_image_and_sidecar(store: AssetStore, tmp_path: Path) -> None:
    asset_id = await store.stage_upload(upload(PNG), BASE)
    assert asset_id is not None
    assert re.fullmatch(r"tmp_asset_[0-9a-f]{24}", asset_id)
    assert asset_id == "tmp_asset_" + hashlib.sha256(PNG).hexdigest()[:24]
    # The id the agent derives for the same image, without asking the worker.
    assert asset_id == upload_id(PNG)
    assert files_in(tmp_path / "uploads") == [f"{asset_id}.json", f"{asset_id}.png"]
    meta = json.loads((tmp_path / "uploads" / f"{asset_id}.json").read_text())
    assert meta == {"asset_id": asset_id, "content_type": "image/png", "asset_base_url": BASE}
    assert not (tmp_path / "assets").exists()


@pytest.mark.parametrize(
    "image",
    [
        upload(PNG, "image/svg+xml"),
        upload(b""),
        upload(b"\0" * (MAX_ASSET_BYTES + 1)),
    ],
)
async def test_unstageable_uploads_write_nothing(
    store: AssetStore, tmp_path: Path, image: DecodedImage
) -> None:
    assert await store.stage_upload(image, BASE) is None
    assert files_in(tmp_path / "uploads") == []


async def test_promote_gives_a_permanent_asset(store: AssetStore, tmp_path: Path) -> None:
    asset_id = await store.stage_upload(upload(JPEG, "image/jpeg"), BASE)
    assert asset_id is not None
    promoted = await store.promote(asset_id)
    assert promoted is not None
    assert promoted.asset_base_url == BASE
    assert promoted.asset.content_type == "image/jpeg"
    url = store.public_url(promoted.asset.name, promoted.asset_base_url)
    assert url.startswith(f"{BASE}/local-assets/asset_")
    assert asset_id not in url
    assert files_in(tmp_path / "assets") == [promoted.asset.name]
    assert await store.read(promoted.asset.name) == JPEG


async def test_promote_uses_the_base_url_of_the_latest_upload(store: AssetStore) -> None:
    await store.stage_upload(upload(PNG), BASE)
    asset_id = await store.stage_upload(upload(PNG), "https://tunnel.example")
    assert asset_id is not None
    promoted = await store.promote(asset_id)
    assert promoted is not None
    assert promoted.asset_base_url == "https://tunnel.example"


@pytest.mark.parametrize(
    "asset_id",
    [
        "tmp_asset_" + "0" * 24,  # well formed, never staged
        "tmp_asset_../../etc/passwd",
        "tmp_asset_" + "A" * 24,
        "asset_" + "0" * 24,
        "",
    ],
)
async def test_promote_unknown_or_malformed_ids(tmp_path: Path, asset_id: str) -> None:
    spy = SpyBackend(tmp_path)
    store = AssetStore(spy)
    assert await store.promote(asset_id) is None
    assert all(re.fullmatch(r"tmp_asset_[0-9a-f]{24}\.json", name) for _, name in spy.touched)


async def test_promote_refuses_tampered_uploads(store: AssetStore, tmp_path: Path) -> None:
    asset_id = await store.stage_upload(upload(PNG), BASE)
    assert asset_id is not None
    (tmp_path / "uploads" / f"{asset_id}.png").write_bytes(b"something else")
    assert await store.promote(asset_id) is None
    other = await store.stage_upload(upload(JPEG, "image/jpeg"), BASE)
    assert other is not None
    (tmp_path / "uploads" / f"{other}.json").write_text("{not json")
    assert await store.promote(other) is None
    assert not (tmp_path / "assets").exists()


async def test_persist_data_url_skips_staging_and_dedupes(
    store: AssetStore, tmp_path: Path
) -> None:
    first = await store.persist_data_url(data_url(PNG))
    second = await store.persist_data_url(data_url(PNG))
    assert first is not None
    assert first == second
    assert store.public_url(first.name, BASE).startswith(f"{BASE}/local-assets/asset_")
    assert files_in(tmp_path / "assets") == [first.name]
    assert not (tmp_path / "uploads").exists()
    assert await store.persist_data_url("https://example.com/a.png") is None


async def test_stage_uploads_maps_each_stageable_image(store: AssetStore) -> None:
    good, other = InputImage.of("image/png", PNG), InputImage.of("image/jpeg", JPEG)
    bad = InputImage.of("image/bmp", PNG + b"!")
    staged = await stage_uploads(store, [good, bad, other, good], BASE)
    assert staged == {
        good.sha256: "tmp_asset_" + hashlib.sha256(PNG).hexdigest()[:24],
        other.sha256: "tmp_asset_" + hashlib.sha256(JPEG).hexdigest()[:24],
    }


async def test_another_backend_replaces_the_directory() -> None:
    backend = MemoryBackend()
    store = AssetStore(backend)
    asset_id = await store.stage_upload(upload(PNG), BASE)
    assert asset_id is not None
    promoted = await store.promote(asset_id)
    assert promoted is not None
    assert await store.read(promoted.asset.name) == PNG
    assert await store.path_of(promoted.asset.name) is None
    assert ("assets", promoted.asset.name) in backend.blobs


# -- local-asset URLs -----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1:7001", "localhost:7001", "[::1]:7001", "127.0.0.2"])
async def test_loopback_asset_url_becomes_a_data_url(store: AssetStore, host: str) -> None:
    stored = await store.put(PNG, "image/png")
    converted = await store.local_url_to_data_url(f"http://{host}/local-assets/{stored.name}")
    assert converted == data_url(PNG)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/local-assets/asset_{d}.png",  # not ours
        "http://10.0.0.1/local-assets/asset_{d}.png",
        "http://127.0.0.1:7001/other/asset_{d}.png",
        "ftp://127.0.0.1/local-assets/asset_{d}.png",
        "data:image/png;base64,aGVsbG8=",
        "not a url",
    ],
)
async def test_other_urls_pass_through(store: AssetStore, url: str) -> None:
    stored = await store.put(PNG, "image/png")
    digest = stored.name.removeprefix("asset_").removesuffix(".png")
    url = url.replace("{d}", digest)
    assert await store.local_url_to_data_url(url) == url


async def test_missing_local_asset_is_returned_unchanged(store: AssetStore) -> None:
    url = f"{BASE}/local-assets/asset_{'1' * 24}.png"
    assert await store.local_url_to_data_url(url) == url


@pytest.mark.parametrize(
    "path",
    [
        "/local-assets/../../etc/passwd",
        "/local-assets/%2e%2e/%2e%2e/etc/passwd",
        "/local-assets/..%2f..%2fetc%2fpasswd",
        "/local-assets/../uploads/tmp_asset_" + "0" * 24 + ".png",
    ],
)
async def test_traversal_is_returned_unchanged_and_never_read(tmp_path: Path, path: str) -> None:
    spy = SpyBackend(tmp_path)
    store = AssetStore(spy)
    url = f"http://127.0.0.1:7001{path}"
    assert await store.local_url_to_data_url(url) == url
    assert spy.touched == []


async def test_own_base_url_counts_as_local(store: AssetStore) -> None:
    stored = await store.put(PNG, "image/png")
    url = f"https://tunnel.example/local-assets/{stored.name}"
    assert await store.local_url_to_data_url(url) == url
    assert await store.local_url_to_data_url(url, ["https://tunnel.example"]) == data_url(PNG)
    assert await store.local_url_to_data_url(url, ["https://other.example"]) == url


@given(st.text(max_size=80))
def test_local_asset_name_only_yields_valid_names(suffix: str) -> None:
    name = AssetStore.local_asset_name(f"http://127.0.0.1/local-assets/{suffix}")
    assert name is None or AssetStore.is_asset_name(name)
