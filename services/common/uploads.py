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
# Decoding first and measuring after would let a huge payload cost its full decode.
_MAX_BASE64_CHARS = 4 * -(-MAX_ASSET_BYTES // 3)


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


def decode_image_data_url(data_url: str) -> DecodedImage | None:
    """The image in a `data:image/…;base64,…` URL, or None unless it is one we accept.

    Accepted: png, jpeg, gif or webp; strict base64 (no whitespace, correct padding);
    at most MAX_ASSET_BYTES once decoded.
    """
    if not isinstance(data_url, str) or data_url[:5].lower() != "data:":
        return None
    header, sep, payload = data_url[5:].partition(",")
    if not sep or len(payload) > _MAX_BASE64_CHARS:
        return None
    media_type, _, encoding = header.partition(";")
    content_type = media_type.strip().lower()
    if encoding.strip().lower() != "base64" or content_type not in CONTENT_TYPE_EXTENSIONS:
        return None
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not data or len(data) > MAX_ASSET_BYTES:
        return None
    return DecodedImage(content_type, data)
