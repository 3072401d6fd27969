"""Fitting images into the Anthropic Messages API limits.

The API rejects an image whose base64 text exceeds 5 MiB or whose longest side
exceeds 8000 px, and lowers the side limit to 2000 px once a request carries
more than 20 images. Images within the limits go out untouched (re-encoding
would cost quality and break prompt caching); the others are decoded within the
process's image budget (`services.common.images`: refused past
S2C_IMAGE_MAX_PIXELS, reduced by a whole factor while decoding) and re-encoded as
JPEG until they fit. A whole factor can land below the side limit (8000 px → 4000):
nothing the model sees is lost, since the API itself scales every image down to
about 1.15 megapixels (1568 px on the long side) before the model reads it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
from dataclasses import dataclass

from PIL import Image

from services.common.images import ImageDecoder, ImageRefused, read_header

MAX_BASE64_BYTES = 5 * 1024 * 1024
# A margin under the API's 8000 px so rounding on its side can never tip us over.
MAX_DIMENSION = 7990
MANY_IMAGES_MAX_DIMENSION = 2000
MANY_IMAGES_THRESHOLD = 20

SUPPORTED_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

_FIRST_JPEG_QUALITY = 95
_MIN_JPEG_QUALITY = 10
_QUALITY_STEP = 5
# Applied when even the lowest quality is too large: only absurd inputs get here.
_SHRINK_FACTOR = 0.75


@dataclass(frozen=True, slots=True, weakref_slot=True)
class EncodedImage:
    media_type: str
    data: str  # base64


def max_dimension_for(image_count: int) -> int:
    """The longest side allowed for every image of a request holding `image_count` images."""
    return MANY_IMAGES_MAX_DIMENSION if image_count > MANY_IMAGES_THRESHOLD else MAX_DIMENSION


def base64_length(byte_count: int) -> int:
    return 4 * math.ceil(byte_count / 3)


def fit_image(
    data: bytes,
    media_type: str,
    decoder: ImageDecoder,
    *,
    max_dimension: int = MAX_DIMENSION,
    max_base64_bytes: int = MAX_BASE64_BYTES,
) -> EncodedImage:
    """Encodes `data` for an image block, shrinking and re-encoding only when a limit demands.

    Raises ImageRefused (its message says why) when the image has to be re-encoded but
    cannot be read, or is too large to decode.
    """
    media_type = media_type.lower()
    within_bytes = base64_length(len(data)) <= max_base64_bytes
    if within_bytes and media_type in SUPPORTED_MEDIA_TYPES:
        try:
            header = read_header(data)
        except ImageRefused:
            pass  # not one we can read: re-encoding says so
        else:
            if max(header.width, header.height) <= max_dimension:
                return EncodedImage(media_type, base64.b64encode(data).decode("ascii"))

    def reencoded() -> EncodedImage:
        with decoder.open(data, max_side=max_dimension, flatten=True) as image:
            return _jpeg_within(image, max_base64_bytes)

    # The variants of a generation hold the same bytes: one of them decodes and encodes.
    key = (hashlib.sha256(data).digest(), max_dimension, max_base64_bytes)
    return decoder.shared(key, reencoded)


def _jpeg_within(image: Image.Image, max_base64_bytes: int) -> EncodedImage:
    quality = _FIRST_JPEG_QUALITY
    while True:
        encoded = _jpeg(image, quality)
        if base64_length(len(encoded)) <= max_base64_bytes:
            return EncodedImage("image/jpeg", base64.b64encode(encoded).decode("ascii"))
        if quality > _MIN_JPEG_QUALITY:
            quality -= _QUALITY_STEP
        else:
            width, height = image.size
            size = (max(1, int(width * _SHRINK_FACTOR)), max(1, int(height * _SHRINK_FACTOR)))
            image = image.resize(size, Image.Resampling.LANCZOS)


def _jpeg(image: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=quality)
    return out.getvalue()
