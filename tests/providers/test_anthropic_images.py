"""Anthropic image limits: what passes untouched, what shrinks, and to what."""

from __future__ import annotations

import base64
import io
import random

import pillow_heif
import pytest
from PIL import Image

from services.agent.providers.anthropic_images import (
    MANY_IMAGES_MAX_DIMENSION,
    MAX_BASE64_BYTES,
    MAX_DIMENSION,
    EncodedImage,
    base64_length,
    fit_image,
    max_dimension_for,
)
from services.common.images import ImageDecoder, ImageLimits, ImageTooLarge, ImageUnreadable


def _encode(image: Image.Image, fmt: str = "PNG") -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def _png(width: int, height: int, color: tuple[int, ...] = (10, 120, 200)) -> bytes:
    mode = "RGBA" if len(color) == 4 else "RGB"
    return _encode(Image.new(mode, (width, height), color))


def _noise_png(side: int) -> bytes:
    # Random pixels do not compress, so the size in bytes is predictable.
    pixels = random.Random(side).randbytes(side * side * 3)
    return _encode(Image.frombytes("RGB", (side, side), pixels))


DECODER = ImageDecoder(ImageLimits())


def _decoded(encoded: EncodedImage) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(encoded.data)))


def test_an_image_within_limits_goes_out_byte_identical() -> None:
    data = _png(640, 480)

    encoded = fit_image(data, "image/png", DECODER)

    assert encoded == EncodedImage("image/png", base64.b64encode(data).decode())


def test_media_type_is_compared_case_insensitively() -> None:
    data = _png(10, 10)

    assert fit_image(data, "IMAGE/PNG", DECODER).media_type == "image/png"


def test_a_side_over_the_api_limit_is_scaled_to_7990_keeping_the_aspect() -> None:
    data = _png(8000, 400)

    encoded = fit_image(data, "image/png", DECODER)

    assert encoded.media_type == "image/jpeg"
    # 400 * 7990 / 8000 = 399.5, truncated.
    assert _decoded(encoded).size == (MAX_DIMENSION, 399)


def test_the_many_image_limit_scales_the_longest_side_to_2000() -> None:
    data = _png(30, 2100)

    encoded = fit_image(data, "image/png", DECODER, max_dimension=MANY_IMAGES_MAX_DIMENSION)

    assert _decoded(encoded).size == (28, 2000)  # 30 * 2000 / 2100 = 28.57


def test_a_thin_image_never_scales_below_one_pixel() -> None:
    encoded = fit_image(_png(4000, 1), "image/png", DECODER, max_dimension=100)

    assert _decoded(encoded).size == (100, 1)


@pytest.mark.parametrize(
    ("image_count", "expected"),
    [(0, MAX_DIMENSION), (20, MAX_DIMENSION), (21, MANY_IMAGES_MAX_DIMENSION)],
)
def test_the_side_limit_drops_once_a_request_holds_more_than_20_images(
    image_count: int, expected: int
) -> None:
    assert max_dimension_for(image_count) == expected


def test_an_image_over_5_mib_of_base64_is_reencoded_at_the_same_size() -> None:
    data = _noise_png(1400)
    assert base64_length(len(data)) > MAX_BASE64_BYTES

    encoded = fit_image(data, "image/png", DECODER)

    assert encoded.media_type == "image/jpeg"
    assert len(encoded.data) <= MAX_BASE64_BYTES
    assert _decoded(encoded).size == (1400, 1400)


def test_jpeg_quality_drops_until_the_image_fits() -> None:
    data = _noise_png(300)
    first_try = len(base64.b64encode(_encode(Image.open(io.BytesIO(data)), "JPEG")))
    limit = 60_000
    assert first_try > limit  # quality 75 (Pillow's default) is already too big

    encoded = fit_image(data, "image/png", DECODER, max_base64_bytes=limit)

    assert len(encoded.data) <= limit
    assert _decoded(encoded).size == (300, 300)


def test_an_image_too_big_even_at_the_lowest_quality_is_scaled_down() -> None:
    data = _noise_png(300)

    encoded = fit_image(data, "image/png", DECODER, max_base64_bytes=4_000)

    assert len(encoded.data) <= 4_000
    width, height = _decoded(encoded).size
    assert width == height
    assert width < 300


def test_transparency_is_flattened_onto_white() -> None:
    data = _png(3000, 10, (0, 0, 0, 0))

    encoded = fit_image(data, "image/png", DECODER, max_dimension=MANY_IMAGES_MAX_DIMENSION)

    pixel = _decoded(encoded).convert("RGB").getpixel((5, 2))
    assert isinstance(pixel, tuple)
    assert min(pixel) >= 250


def test_a_type_the_api_does_not_take_is_converted_to_jpeg() -> None:
    out = io.BytesIO()
    pillow_heif.from_pillow(Image.new("RGB", (20, 10), (200, 0, 0))).save(out, quality=90)
    data = out.getvalue()

    encoded = fit_image(data, "image/heic", DECODER)

    assert encoded.media_type == "image/jpeg"
    assert _decoded(encoded).size == (20, 10)


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml"),
        # Formats nobody sends us stay undecoded: every decoder is attack surface.
        (_encode(Image.new("RGB", (20, 10)), "BMP"), "image/bmp"),
    ],
)
def test_bytes_that_are_no_image_we_read_and_must_be_converted_raise(
    data: bytes, media_type: str
) -> None:
    with pytest.raises(ImageUnreadable):
        fit_image(data, media_type, DECODER)


def test_an_image_over_the_pixel_budget_is_refused_naming_the_limit() -> None:
    data = _png(9000, 200)  # needs re-encoding (wider than 7990) and 7.2 MB to decode

    with pytest.raises(ImageTooLarge, match="S2C_IMAGE_MAX_PIXELS"):
        fit_image(data, "image/png", ImageDecoder(ImageLimits(1_000_000)))
