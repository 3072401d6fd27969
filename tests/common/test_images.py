"""The image budget: headers read without decoding, refusals that name the limit, decodes
that draft, resample in strips, flatten and turn upright, and a gate that lets one large
decode run at a time."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable

import pillow_heif
import pytest
from PIL import Image

from services.common.images import (
    MAX_PIXELS_ENV,
    ImageDecoder,
    ImageLimits,
    ImageTooLarge,
    ImageUnreadable,
    check,
    plan_decode,
    read_header,
)
from tests.attacks import solid_png

DEFAULT = ImageLimits()


def encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    if fmt == "HEIF":
        pillow_heif.from_pillow(image).save(out, quality=90)
    else:
        image.save(out, format=fmt, **options)
    return out.getvalue()


def gradient(width: int, height: int) -> Image.Image:
    image = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    return Image.merge(
        "RGB", (image.getchannel(0), image.getchannel(0).rotate(90), image.getchannel(0))
    )


@pytest.mark.parametrize(
    ("fmt", "mode", "options", "alpha"),
    [
        ("PNG", "RGB", {}, False),
        ("PNG", "RGBA", {}, True),
        ("JPEG", "RGB", {}, False),
        ("GIF", "P", {}, False),
        ("WEBP", "RGB", {"quality": 50}, False),
        ("WEBP", "RGBA", {"lossless": True}, True),
        ("WEBP", "RGB", {"lossless": True}, False),
        ("HEIF", "RGB", {}, False),
    ],
)
def test_the_header_gives_size_and_alpha_without_decoding(
    fmt: str, mode: str, options: dict[str, object], alpha: bool
) -> None:
    data = encode(Image.new(mode, (321, 123)), fmt, **options)

    header = read_header(data)

    assert (header.width, header.height, header.alpha) == (321, 123, alpha)


def test_a_huge_png_is_refused_from_its_header_naming_the_limit() -> None:
    # Pillow keeps RGB at 4 bytes a pixel: 9000 × 9000 is 324 MB decoded.
    header = read_header(solid_png(9000, 9000))

    with pytest.raises(ImageTooLarge) as refused:
        plan_decode(header, DEFAULT)

    assert refused.value.message == (
        "the image is 9000×9000 pixels (PNG); decoding it would take about 324 MB, more "
        "than the limit of 24000000 pixels allows (96 MB at 4 bytes a pixel; "
        f"{MAX_PIXELS_ENV})"
    )


def test_a_webp_counts_its_decoders_buffers() -> None:
    # libwebp's canvas and Pillow's copy of it: four times a PNG's memory a pixel.
    header = read_header(encode(Image.new("RGB", (3000, 3000)), "WEBP", quality=10))

    assert plan_decode(header, ImageLimits(40_000_000)).decode_bytes == 9_000_000 * 16
    with pytest.raises(ImageTooLarge, match=r"3000×3000 pixels \(WEBP\)"):
        plan_decode(header, ImageLimits(30_000_000))


def test_a_baseline_jpeg_too_large_to_decode_whole_is_drafted_instead() -> None:
    data = encode(gradient(4000, 2000), "JPEG", quality=70)
    limits = ImageLimits(1_000_000)  # 4 MB: the whole image would take 32 MB

    plan = plan_decode(read_header(data), limits)
    with ImageDecoder(limits).open(data) as image:
        size = image.size

    assert plan.scale == 4
    assert size == (1000, 500)


def test_a_progressive_jpeg_pays_for_its_coefficients_at_any_scale() -> None:
    data = encode(gradient(2000, 2000), "JPEG", progressive=True)

    header = read_header(data)
    plan = plan_decode(header, DEFAULT, max_side=200)

    assert header.buffered
    assert header.samples == 1.5  # 4:2:0: luma whole, two chroma planes a quarter each
    # Drafted to 1/8, but libjpeg still holds 2 bytes for each sample of the whole image.
    assert plan.scale == 8
    assert plan.decode_bytes == 250 * 250 * 4 + 2000 * 2000 * 2 * 1.5


def test_an_exif_thumbnail_is_not_counted_as_a_second_scan() -> None:
    exif = Image.Exif()
    exif[0x0112] = 1
    thumbnail = encode(Image.new("RGB", (64, 64)), "JPEG")
    data = encode(gradient(800, 600), "JPEG", exif=exif.tobytes() + thumbnail)

    assert b"\xff\xda" in thumbnail
    assert not read_header(data).buffered


@pytest.mark.parametrize(
    "data",
    [b"", b"GIF89a", b"\x89PNG\r\n\x1a\n" + b"\0" * 20, b"RIFF\0\0\0\0WEBPVP8X", b"<svg/>"],
)
def test_bytes_that_are_no_readable_image_are_unreadable(data: bytes) -> None:
    with pytest.raises(ImageUnreadable):
        read_header(data)


def test_a_truncated_image_is_unreadable_once_decoded() -> None:
    data = encode(gradient(300, 300), "PNG")[:-400]

    with pytest.raises(ImageUnreadable, match="could not be decoded"):
        ImageDecoder(DEFAULT).open(data).__enter__()


def test_check_refuses_only_what_no_decode_could_fit() -> None:
    limits = ImageLimits(1_000_000)
    big_jpeg = encode(gradient(4000, 2000), "JPEG")  # drafted to 1/8: fits
    big_png = encode(Image.new("RGB", (1100, 1000)), "PNG")

    assert check(big_jpeg, limits).width == 4000
    with pytest.raises(ImageTooLarge):
        check(big_png, limits)


def test_strip_resampling_matches_resampling_the_whole_image() -> None:
    source = gradient(1200, 3000)
    data = encode(source, "PNG")

    with ImageDecoder(DEFAULT).open(data, max_side=1000) as image:
        ours = image.copy()

    whole = source.resize(ours.size, Image.Resampling.LANCZOS, reducing_gap=2.0)
    assert ours.size == (400, 1000)
    ours_bytes, whole_bytes = ours.tobytes(), whole.tobytes()
    differences = [abs(a - b) for a, b in zip(ours_bytes, whole_bytes, strict=True)]
    assert max(differences) <= 3  # the seams between strips do not show


def test_transparency_is_flattened_onto_white_after_resampling() -> None:
    image = Image.new("RGBA", (400, 100), (0, 0, 0, 0))
    image.paste((255, 0, 0, 255), (0, 0, 200, 100))
    data = encode(image, "PNG")

    with ImageDecoder(DEFAULT).open(data, max_side=100, flatten=True) as flat:
        assert flat.mode == "RGB"
        assert flat.size == (100, 25)
        assert flat.getpixel((10, 10)) == (255, 0, 0)
        assert flat.getpixel((90, 10)) == (255, 255, 255)
    with ImageDecoder(DEFAULT).open(data) as kept:
        assert kept.mode == "RGBA"


def test_upright_applies_the_exif_orientation() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored rotated: the camera was turned clockwise
    data = encode(Image.new("RGB", (40, 20)), "JPEG", exif=exif.tobytes())

    with ImageDecoder(DEFAULT).open(data, upright=True) as image:
        assert image.size == (20, 40)
    with ImageDecoder(DEFAULT).open(data) as image:
        assert image.size == (40, 20)


def test_a_palette_image_is_converted_in_strips() -> None:
    data = encode(gradient(300, 200).convert("P"), "GIF")

    with ImageDecoder(DEFAULT).open(data) as image:
        assert (image.mode, image.size) == ("RGB", (300, 200))


def test_the_pixels_are_released_when_the_block_ends() -> None:
    with ImageDecoder(DEFAULT).open(encode(gradient(50, 50), "PNG")) as image:
        pass

    with pytest.raises(ValueError, match="closed image"):
        image.getpixel((0, 0))


def _blocked_decoder(
    limits: ImageLimits,
) -> tuple[ImageDecoder, threading.Event, Callable[[], None]]:
    """A decoder whose first decode holds its place until `release()`."""
    decoder = ImageDecoder(limits)
    inside, go = threading.Event(), threading.Event()

    def hold() -> None:
        with decoder.open(encode(Image.new("RGB", (1000, 1000)), "PNG")):
            inside.set()
            go.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(10)

    def release() -> None:
        go.set()
        thread.join(10)

    return decoder, inside, release


def test_a_large_decode_waits_while_another_runs() -> None:
    decoder, _, release = _blocked_decoder(ImageLimits(1_000_000))  # room for one of them
    entered = threading.Event()

    def second() -> None:
        with decoder.open(encode(Image.new("RGB", (1000, 1000)), "PNG")):
            entered.set()

    thread = threading.Thread(target=second)
    thread.start()
    assert not entered.wait(0.3)  # a bounded look, not a sleep the result depends on
    release()
    thread.join(10)
    assert entered.is_set()


def test_small_decodes_run_beside_a_large_one() -> None:
    decoder, _, release = _blocked_decoder(ImageLimits(2_000_000))
    try:
        with decoder.open(encode(Image.new("RGB", (100, 100)), "PNG")) as small:
            assert small.size == (100, 100)
    finally:
        release()


class _Result:
    """A value that takes weak references, as `shared` results must."""


def test_callers_at_the_same_time_share_one_result_while_they_hold_it() -> None:
    decoder = ImageDecoder(DEFAULT)
    made: list[_Result] = []
    started, release = threading.Event(), threading.Event()

    def make() -> _Result:
        started.set()
        release.wait(10)
        made.append(_Result())
        return made[-1]

    got: list[_Result] = []
    first = threading.Thread(target=lambda: got.append(decoder.shared("k", make)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: got.append(decoder.shared("k", make)))
    second.start()
    release.set()
    first.join(10)
    second.join(10)

    assert len(made) == 1
    assert got[0] is got[1] is made[0]
    got.clear()
    made.clear()
    # Nobody holds it any more: the next caller makes it anew.
    again = decoder.shared("k", make)
    assert made == [again]
