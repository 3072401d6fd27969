"""The image asset store: uploaded images staged under temporary ids, and served assets.

Two areas, both content-addressed by the first 24 hex characters of the bytes' sha256
(`services.common.uploads`, whose ids the agent derives too):

* `uploads/`: images the user sent with a prompt, staged as `tmp_asset_<digest><ext>` plus a
  JSON sidecar `tmp_asset_<digest>.json` holding `{asset_id, content_type, asset_base_url}`.
  The model only ever sees the id; `save_assets` promotes the ones it wants to keep.
* `assets/`: permanent assets `asset_<digest><ext>`, served by the gateway at
  `/local-assets/<name>` and linked as `{asset_base_url}/local-assets/<name>`.

Names are checked against strict patterns before they reach storage, so no caller-supplied
string can name a path outside the two areas. Storage sits behind `BlobBackend` so that an
object store can replace the local directory without touching the naming rules.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Protocol
from urllib.parse import unquote, urlsplit

from services.common.uploads import (
    CONTENT_TYPE_EXTENSIONS,
    MAX_ASSET_BYTES,
    DecodedImage,
    decode_image_data_url,
    digest_of,
    upload_id,
)

ASSET_AREA = "assets"
UPLOAD_AREA = "uploads"
LOCAL_ASSETS_PREFIX = "/local-assets/"

_EXTENSION_TYPES: Mapping[str, str] = MappingProxyType(
    {ext: ct for ct, ext in CONTENT_TYPE_EXTENSIONS.items()}
)

_ASSET_NAME = re.compile(r"asset_[0-9a-f]{24}\.(?:png|jpg|gif|webp)")
_TMP_ID = re.compile(r"tmp_asset_[0-9a-f]{24}")
_BLOB_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_LOOPBACK_NAMES = frozenset({"localhost"})


@dataclass(frozen=True, slots=True)
class StoredAsset:
    name: str  # asset_<digest><ext>, the last segment of its /local-assets/ URL
    content_type: str
    size: int


@dataclass(frozen=True, slots=True)
class PromotedAsset:
    asset: StoredAsset
    asset_base_url: str  # as captured when the image was uploaded


class BlobBackend(Protocol):
    """Byte storage for the store: flat `area/name` keys, names already validated."""

    async def write(self, area: str, name: str, data: bytes) -> None:
        """Store `data` so that readers see either nothing or all of it."""

    async def read(self, area: str, name: str) -> bytes | None: ...

    async def exists(self, area: str, name: str) -> bool: ...

    def local_path(self, area: str, name: str) -> Path | None:
        """Where the blob lives on this machine, for serving; None for remote storage."""


class LocalDirBackend:
    """Blobs as files under `root/<area>/<name>`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, area: str, name: str) -> Path:
        # The store validates names already; this is the last line if a backend is reused.
        for part in (area, name):
            if not _BLOB_NAME.fullmatch(part) or ".." in part:
                raise ValueError(f"invalid blob key part: {part!r}")
        return self.root / area / name

    async def write(self, area: str, name: str, data: bytes) -> None:
        await asyncio.to_thread(_atomic_write, self._path(area, name), data)

    async def read(self, area: str, name: str) -> bytes | None:
        return await asyncio.to_thread(_read_or_none, self._path(area, name))

    async def exists(self, area: str, name: str) -> bool:
        return await asyncio.to_thread(self._path(area, name).is_file)

    def local_path(self, area: str, name: str) -> Path:
        return self._path(area, name)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    host = host.strip("[]").rstrip(".").lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, default ports filled in; None otherwise."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80)


class AssetStore:
    """See the module docstring. Safe to share between concurrent tool calls."""

    def __init__(self, storage: Path | BlobBackend) -> None:
        self._blobs: BlobBackend = (
            LocalDirBackend(storage) if isinstance(storage, Path) else storage
        )

    # -- served assets ---------------------------------------------------------------------

    async def put(self, data: bytes, content_type: str) -> StoredAsset:
        """Store `data` as a served asset; identical bytes of one type are stored once."""
        ext = CONTENT_TYPE_EXTENSIONS.get(content_type)
        if ext is None:
            raise ValueError(f"unsupported asset type: {content_type}")
        if not data or len(data) > MAX_ASSET_BYTES:
            raise ValueError("asset must be between 1 byte and 20 MiB")
        name = f"asset_{digest_of(data)}{ext}"
        if not await self._blobs.exists(ASSET_AREA, name):
            await self._blobs.write(ASSET_AREA, name, data)
        return StoredAsset(name, content_type, len(data))

    @staticmethod
    def is_asset_name(name: str) -> bool:
        return isinstance(name, str) and _ASSET_NAME.fullmatch(name) is not None

    @staticmethod
    def content_type_of(name: str) -> str | None:
        """The type an asset is served with, from its name; None for a name we never issue."""
        if not AssetStore.is_asset_name(name):
            return None
        return _EXTENSION_TYPES[name[name.rindex(".") :]]

    async def read(self, name: str) -> bytes | None:
        if not self.is_asset_name(name):
            return None
        return await self._blobs.read(ASSET_AREA, name)

    async def path_of(self, name: str) -> Path | None:
        """The local file behind an existing asset, for serving; None otherwise."""
        if not self.is_asset_name(name) or not await self._blobs.exists(ASSET_AREA, name):
            return None
        return self._blobs.local_path(ASSET_AREA, name)

    @staticmethod
    def public_url(name: str, base_url: str) -> str:
        return f"{base_url.rstrip('/')}{LOCAL_ASSETS_PREFIX}{name}"

    async def persist_data_url(self, data_url: str) -> StoredAsset | None:
        """Store an image data URL straight as a served asset (no staging)."""
        image = decode_image_data_url(data_url)
        if image is None:
            return None
        return await self.put(image.data, image.content_type)

    # -- local-asset URLs ------------------------------------------------------------------

    @staticmethod
    def local_asset_name(url: str, own_bases: Iterable[str] = ()) -> str | None:
        """The asset a URL points at when it is one of ours, else None.

        Ours means `/local-assets/<valid name>` on a loopback host, or on the origin of
        one of `own_bases` (the asset base URL a request was served under). Anything
        that does not match the strict name pattern (`..`, encoded slashes) is not ours.
        """
        if not isinstance(url, str):
            return None
        origin = url_origin(url)
        if origin is None:
            return None
        if not is_loopback_host(origin[1]) and origin not in {
            o for base in own_bases if base and (o := url_origin(base)) is not None
        }:
            return None
        path = urlsplit(url.strip()).path
        if not path.startswith(LOCAL_ASSETS_PREFIX):
            return None
        name = unquote(path[len(LOCAL_ASSETS_PREFIX) :])
        return name if AssetStore.is_asset_name(name) else None

    async def local_url_to_data_url(self, url: str, own_bases: Iterable[str] = ()) -> str:
        """Inline one of our asset URLs as a data URL; every other string comes back as is.

        Remote services cannot fetch a loopback URL, so our own assets travel as bytes.
        A URL naming a missing asset also comes back unchanged.
        """
        name = self.local_asset_name(url, own_bases)
        if name is None:
            return url
        data = await self.read(name)
        content_type = self.content_type_of(name)
        if data is None or content_type is None:
            return url
        return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"

    # -- uploads ---------------------------------------------------------------------------

    async def stage_upload(self, image: DecodedImage, base_url: str) -> str | None:
        """Stage an uploaded image; returns its `tmp_asset_<digest>` id, None when refused
        (not png/jpeg/gif/webp, empty, over MAX_ASSET_BYTES)."""
        size = len(image.data)
        if image.content_type not in CONTENT_TYPE_EXTENSIONS or not 0 < size <= MAX_ASSET_BYTES:
            return None
        asset_id = upload_id(image.data)
        ext = CONTENT_TYPE_EXTENSIONS[image.content_type]
        # Image first: a sidecar is only ever visible next to a complete image.
        if not await self._blobs.exists(UPLOAD_AREA, asset_id + ext):
            await self._blobs.write(UPLOAD_AREA, asset_id + ext, image.data)
        meta = {
            "asset_id": asset_id,
            "content_type": image.content_type,
            "asset_base_url": base_url,
        }
        await self._blobs.write(UPLOAD_AREA, f"{asset_id}.json", json.dumps(meta).encode())
        return asset_id

    async def promote(self, asset_id: str) -> PromotedAsset | None:
        """Copy a staged upload into the served assets; None for an unknown or broken id."""
        if not isinstance(asset_id, str) or not _TMP_ID.fullmatch(asset_id):
            return None
        raw = await self._blobs.read(UPLOAD_AREA, f"{asset_id}.json")
        if raw is None:
            return None
        try:
            meta = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(meta, dict):
            return None
        content_type = meta.get("content_type")
        base_url = meta.get("asset_base_url")
        if not isinstance(content_type, str) or not isinstance(base_url, str):
            return None
        ext = CONTENT_TYPE_EXTENSIONS.get(content_type)
        if ext is None:
            return None
        data = await self._blobs.read(UPLOAD_AREA, asset_id + ext)
        # The id is the digest: bytes that no longer match it are not the upload it named.
        if data is None or upload_id(data) != asset_id:
            return None
        return PromotedAsset(await self.put(data, content_type), base_url)
