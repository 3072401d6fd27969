"""Uploaded images: which data URLs we accept, and the content-addressed id each one gets.

The agent lists a request's uploads in the prompt as `tmp_asset_<digest>` ids and the tool
worker stages the same images under the same ids; neither tells the other, each derives
the id from the bytes. So the acceptance rules and the id live here, once, for both.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

MAX_ASSET_BYTES = 20 * 1024 * 1024
DIGEST_CHARS = 24
UPLOAD_ID_PREFIX = "tmp_asset_"

CONTENT_TYPE_EXTENSIONS: Mapping[str, str] = MappingProxyType(
    {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}
)


@dataclass(frozen=True, slots=True)
class DecodedImage:
    content_type: str
    data: bytes


def digest_of(data: bytes) -> str:
    """The first DIGEST_CHARS hex characters of the bytes' sha256."""
    return hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]


def upload_id(data: bytes) -> str:
    """The `tmp_asset_<digest>` id an uploaded image is staged and named under."""
    return f"{UPLOAD_ID_PREFIX}{digest_of(data)}"


def parse_data_url(url: str, *, max_bytes: int | None = None) -> DecodedImage:
    """The media type (lower case) and bytes of a `data:<type>;base64,<payload>` URL: the
    one data-URL parser of the project. ValueError says why a URL is not one: not a data
    URL, not base64, not strict base64 (no whitespace, correct padding), empty, or more
    than `max_bytes` once decoded (measured before decoding: a huge payload costs nothing).
    """
    if not isinstance(url, str) or url[:5].lower() != "data:":
        raise ValueError("not a data URL")
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise ValueError("not a data URL")
    if max_bytes is not None and len(payload) > 4 * -(-max_bytes // 3):
        raise ValueError(f"more than {max_bytes} bytes")
    media_type, _, encoding = header.partition(";")
    if encoding.strip().lower() != "base64":
        raise ValueError("not a base64 data URL")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("invalid base64 in data URL") from None
    if not data:
        raise ValueError("an empty data URL")
    if max_bytes is not None and len(data) > max_bytes:
        raise ValueError(f"more than {max_bytes} bytes")
    return DecodedImage(media_type.strip().lower() or "text/plain", data)


def decode_image_data_url(data_url: str) -> DecodedImage | None:
    """The image in a `data:image/…;base64,…` URL, or None unless it is one we accept.

    Accepted: png, jpeg, gif or webp; strict base64 (no whitespace, correct padding);
    at most MAX_ASSET_BYTES once decoded.
    """
    try:
        image = parse_data_url(data_url, max_bytes=MAX_ASSET_BYTES)
    except ValueError:
        return None
    return image if image.content_type in CONTENT_TYPE_EXTENSIONS else None
