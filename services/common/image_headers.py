"""Reading an image's header without decoding a pixel: its format, size and mode, and
what its decoder will have to hold (`services.common.images` plans from these).

Pillow's plugin classes read only the header until `load`; they are used directly, not
through `Image.open`, so no other format's parser sees the bytes and Pillow's own
process-wide bomb check does not stand in for the budget. WebP is parsed here, because
Pillow's WebP plugin allocates its whole canvas when it opens.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from PIL import GifImagePlugin, ImageFile, JpegImagePlugin, PngImagePlugin, WebPImagePlugin
from pillow_heif.as_plugin import HeifImageFile

Format = Literal["PNG", "JPEG", "GIF", "WEBP", "HEIF"]
_OPENERS: Mapping[Format, Callable[[io.BytesIO], ImageFile.ImageFile]] = {
    "PNG": PngImagePlugin.PngImageFile,
    "JPEG": JpegImagePlugin.JpegImageFile,
    "GIF": GifImagePlugin.GifImageFile,
    "WEBP": WebPImagePlugin.WebPImageFile,
    "HEIF": HeifImageFile,
}
_ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "La", "RGBa"})


class ImageRefused(ValueError):
    """An image that will not be decoded; `message` says why, for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ImageUnreadable(ImageRefused):
    pass


@dataclass(frozen=True, slots=True)
class ImageHeader:
    format: Format
    width: int
    height: int
    mode: str  # Pillow's mode before any conversion
    alpha: bool
    # A JPEG whose coefficients libjpeg must hold whole (progressive, or several scans).
    buffered: bool = False
    # Component samples per pixel (JPEG: 1.5 for 4:2:0 colour), for the coefficient buffers.
    samples: float = 1.0

    @property
    def pixels(self) -> int:
        return self.width * self.height

    def describe(self) -> str:
        return f"{self.width}×{self.height} pixels ({self.format})"


def sniff(data: bytes) -> Format | None:
    """The format by its signature, among those we decode."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    if data[4:8] == b"ftyp":
        return "HEIF"
    return None


def read_header(data: bytes) -> ImageHeader:
    """The header of `data`, without decoding a pixel; ImageUnreadable when it has none."""
    kind = sniff(data)
    if kind is None:
        raise ImageUnreadable("the data is not a PNG, JPEG, GIF, WebP or HEIF image")
    if kind == "WEBP":
        return _webp_header(data)
    image = open_file(data, kind)
    try:
        alpha = image.mode in _ALPHA_MODES or "transparency" in image.info
        buffered = kind == "JPEG" and ("progressive" in image.info or _jpeg_scans(data) > 1)
        samples = _jpeg_samples(image) if buffered else 1.0
        return ImageHeader(kind, image.width, image.height, image.mode, alpha, buffered, samples)
    finally:
        image.close()


def open_file(data: bytes, kind: Format) -> ImageFile.ImageFile:
    try:
        return _OPENERS[kind](io.BytesIO(data))
    except (SyntaxError, OSError, ValueError, struct.error, IndexError, TypeError) as exc:
        raise ImageUnreadable(f"the {kind} image could not be read") from exc


def _webp_header(data: bytes) -> ImageHeader:
    """Canvas size and alpha from the first chunk (RIFF container; VP8, VP8L or VP8X)."""
    chunk = data[12:16]
    try:
        if chunk == b"VP8X":
            flags = data[20]
            width = 1 + int.from_bytes(data[24:27], "little")
            height = 1 + int.from_bytes(data[27:30], "little")
            alpha = bool(flags & 0x10)
        elif chunk == b"VP8L" and data[20] == 0x2F:
            bits = int.from_bytes(data[21:25], "little")
            width, height = 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
            alpha = bool(bits >> 28 & 1)
        elif chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
            width = int.from_bytes(data[26:28], "little") & 0x3FFF
            height = int.from_bytes(data[28:30], "little") & 0x3FFF
            alpha = False
        else:
            raise IndexError
    except IndexError:
        raise ImageUnreadable("the WEBP image could not be read") from None
    if len(data) < 30 or not width or not height:
        raise ImageUnreadable("the WEBP image could not be read")
    return ImageHeader("WEBP", width, height, "RGBA" if alpha else "RGB", alpha)


def _jpeg_samples(image: ImageFile.ImageFile) -> float:
    """Samples per pixel over all components, from their sampling factors (a component
    sampled h×v of the largest factors has that share of the pixels)."""
    layers: list[tuple[str, int, int, int]] = getattr(image, "layer", None) or []
    factors = [(int(h), int(v)) for _, h, v, _ in layers if h > 0 and v > 0]
    if not factors:
        return float(len(image.mode))
    most = max(h for h, _ in factors) * max(v for _, v in factors)
    return float(sum(h * v for h, v in factors)) / most


def _jpeg_scans(data: bytes) -> int:
    """How many scans the first image of a JPEG has.

    Every scan after the first makes libjpeg hold the whole image's coefficients. The
    segments before the first scan are walked by their lengths (an EXIF thumbnail inside
    APP1 is skipped whole); after it, entropy-coded data escapes 0xFF, so the scans'
    markers are counted up to the image's end marker (data after it, as in MPO files,
    is another image).
    """
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return 1
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker == 0xDA:
            end = data.find(b"\xff\xd9", at)
            return data.count(b"\xff\xda", at, len(data) if end < 0 else end)
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            at += 2
            continue
        at += 2 + int.from_bytes(data[at + 2 : at + 4], "big")
    return 1
